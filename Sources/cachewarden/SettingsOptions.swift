import CacheWarden
import CacheWardenCommandLine

/// Where the settings come from: a config file, or one directory given on the command line.
struct SettingsOptions {
    static let options: [OptionSpec] = [
        .value("config", short: "c", "file", help: "The key = value config file.", completion: .file),
        .value(
            "dir", "path",
            help:
                "Watch this one directory (quick mode, without a config file); it is named after its last path component.",
            completion: .directory),
        .value("quota", "size", help: "Quota for --dir, e.g. 500MB or 2GiB (0: none)."),
        .value("max-age", "age", help: "Age limit for --dir: 3d, 1w, 2w, 1mo, <N>s|m|h|d|w, or manual."),
        .flag(
            "allow-any-path",
            help:
                "Accept a --dir that CacheWarden refuses as no cache (a system folder, a home directory or a folder holding one)."
        ),
        .value(
            "size-basis", "basis", help: "How sizes are counted: allocated (blocks, like du) or apparent (bytes).",
            completion: .values(["allocated", "apparent"])),
        .value(
            "backend", "backend",
            help: "How --dir's changes are followed: auto (the default), inotify, fanotify or poll.",
            completion: .values(BackendChoice.allCases.map(\.rawValue))),
    ]

    var config: String?
    var dir: String?
    var quota: String?
    var maxAge: String?
    var allowAnyPath = false
    var sizeBasis: String?
    var backend: String?

    init(_ arguments: ParsedArguments) {
        config = arguments.value("config")
        dir = arguments.value("dir")
        quota = arguments.value("quota")
        maxAge = arguments.value("max-age")
        allowAnyPath = arguments.flag("allow-any-path")
        sizeBasis = arguments.value("size-basis")
        backend = arguments.value("backend")
    }

    /// The settings these options describe; errors name the file and line, or the flag. `checkingLockFiles`: the
    /// lock files of `client_lock` are looked at on disk too (`check`, `run`).
    func load(checkingLockFiles: Bool = false) throws -> WardenSettings {
        switch (config, dir) {
        case (let file?, nil):
            guard quota == nil, maxAge == nil, sizeBasis == nil, backend == nil, !allowAnyPath else {
                throw CLIUsageError(
                    message:
                        "--quota, --max-age, --size-basis, --backend and --allow-any-path go with --dir; with --config set them in the file"
                )
            }
            return try WardenSettings.load(configFile: file, checkingLockFiles: checkingLockFiles)
        case (nil, let path?):
            for (option, value) in [
                ("dir", dir), ("quota", quota), ("max-age", maxAge), ("size-basis", sizeBasis), ("backend", backend),
            ]
            where value?.isEmpty == true {
                let spec = Self.options.first { $0.long == option }
                throw CLIUsageError(
                    message: "--\(option) has an empty value; expected --\(option) <\(spec?.valueName ?? "value")>")
            }
            var lines = ["dir.\(Self.name(for: path)).path = \(Self.literal(path))"]
            if let quota { lines.append("dir.\(Self.name(for: path)).quota = \(quota)") }
            if let maxAge { lines.append("dir.\(Self.name(for: path)).max_age = \(maxAge)") }
            if let sizeBasis { lines.append("size_basis = \(sizeBasis)") }
            if let backend { lines.append("backend = \(backend)") }
            if allowAnyPath { lines.append("dir.\(Self.name(for: path)).allow_any_path = true") }
            // The quick mode goes through the same parser as a file, so its values get the same checks.
            do {
                return try WardenSettings.parse(
                    lines.joined(separator: "\n"), source: "command line", relativeTo: nil,
                    checkingLockFiles: checkingLockFiles)
            } catch {
                throw CLIUsageError(
                    message: error.message.replacing("allow_any_path = true", with: "allow_any_path")
                        .replacing("dir.\(Self.name(for: path)).path", with: "--dir").replacing(
                            "dir.\(Self.name(for: path)).", with: "--"
                        )
                        .replacing("max_age", with: "max-age").replacing("allow_any_path", with: "allow-any-path")
                        .replacing("size_basis", with: "--size-basis")
                        .replacing("for backend", with: "for --backend"))
            }
        case (nil, nil):
            throw DefaultConfig.missing()
        case (_?, _?):
            throw CLIUsageError(message: "give either --config or --dir, not both")
        }
    }

    /// A valid directory name from a path's last component.
    static func name(for path: String) -> String {
        let absolute = PathResolver.absolute(path, relativeTo: PathResolver.currentDirectory())
        let parts = absolute.split(separator: "/").filter { $0 != "." }
        let last = parts.last.map(String.init) ?? "root"
        let cleaned = String(
            last.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
        return cleaned.isEmpty ? "root" : cleaned
    }
}
