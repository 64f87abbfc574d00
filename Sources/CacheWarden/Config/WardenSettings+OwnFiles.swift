import Glibc

extension WardenSettings {
    /// The longest path a Unix socket address takes: `sun_path` holds 108 bytes, the terminating NUL included.
    package static let maxSocketPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Why the daemon cannot listen at `path`, or nil: a path too long for a socket address fails `bind`.
    package static func controlSocketProblem(_ path: String) -> String? {
        let bytes = path.utf8.count
        guard bytes > maxSocketPathBytes else { return nil }
        return
            "\(path) is \(bytes) bytes long; a socket address holds at most \(maxSocketPathBytes) (sun_path): choose a shorter path"
    }

    /// Why the daemon cannot write its metrics file at `path`, or nil: its folder must exist (the file is replaced
    /// atomically, through a temporary file beside it).
    package static func metricsFileProblem(_ path: String) -> String? {
        let folder = PathResolver.parent(of: path)
        var st = stat()
        guard stat(folder, &st) == 0 else {
            return "cannot use the folder \(folder): \(String(cString: strerror(errno))); expected an existing folder"
        }
        return st.isDirectory ? nil : "\(folder) is not a folder; expected an existing folder"
    }

    /// The daemon's own files checked before anything starts, as `run` will use them: `control_socket` fits a
    /// socket address, `metrics_file` has a folder.
    func validateOwnFiles() throws(ConfigError) {
        if let socket = controlSocket, let problem = Self.controlSocketProblem(socket) {
            throw ConfigError(key: "control_socket", message: "control_socket: \(problem)")
        }
        if let file = metricsFile, let problem = Self.metricsFileProblem(file) {
            throw ConfigError(key: "metrics_file", message: "metrics_file: \(problem)")
        }
    }
}
