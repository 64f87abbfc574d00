/// `dir.<name>.client_lock`: its value, and the lock files it names outright, looked at on disk when `check` or `run`
/// reads the file (`checksLockFiles`; any other reader of the config, a `status` or a `trim` looking for its
/// socket, opens none): each must be a regular file the daemon can open, or not be there at all
/// (no client has run yet, so none can hold it). A directory, a FIFO, a symlink or a file it cannot open is an
/// error naming the line of the key — or of `profile`, when the lock is the profile's.
extension ConfigFileParser {
    /// A `client_lock` value handed to `set`, or the expectation.
    static func clientLock(_ text: String, _ set: (ClientLocks) -> Void) -> String? {
        switch ClientLocks.parse(text) {
        case .success(let locks):
            set(locks)
            return nil
        case .failure(let error): return error.message
        }
    }

    /// The lock files of each directory (its own or its profile's) as they are on disk now.
    func checkClientLocks(_ directories: [DirectorySettings], _ seen: [String: Int]) throws(ConfigError) {
        for dir in directories {
            let key = "dir.\(dir.name).client_lock"
            guard let problem = dir.clientLockProblem() else { continue }
            let line = seen[key] ?? seen["dir.\(dir.name).profile"] ?? dir.origin?.line ?? 1
            let note =
                seen[key] == nil ? " (the lock of profile \(dir.profile.rawValue); `\(key) = none` takes none)" : ""
            throw ConfigError(file: file, line: line, message: "\(key): \(problem)\(note)")
        }
    }
}
