import Glibc

extension WardenSettings {
    /// The largest config file read (1 MiB): a config is a few hundred lines; a bigger file is a mistake.
    public static let maxConfigBytes = 1 << 20

    /// Loads a `key = value` config file. Errors name the file and line (`FILE:LINE: …`).
    /// `~` and `$NAME` in path values stand for this process's home and environment (see `DefaultLocations`).
    /// `checkingLockFiles`: look at the lock files `client_lock` names on disk (`check` and `run` do; a command that
    /// only reads the config, for its socket or its directories, opens none).
    public static func load(configFile path: String, checkingLockFiles: Bool = false) throws(ConfigError)
        -> WardenSettings
    {
        let text: String
        do throws(FileContents.Failure) {
            text = try FileContents.load(path, limit: maxConfigBytes, strict: true)
        } catch {
            throw ConfigError(
                file: path, message: "cannot read the config file: \(error); expected a regular file of at most 1 MiB")
        }
        let absolute = PathResolver.absolute(path, relativeTo: PathResolver.currentDirectory())
        var parser = ConfigFileParser(file: path)
        parser.configPath = absolute
        parser.checksLockFiles = checkingLockFiles
        return try parser.parse(text, baseDirectory: PathResolver.parent(of: absolute))
    }

    /// Checks settings built in code with the same rules as the config file (names, paths, quotas).
    public func validate() throws(ConfigError) { try validate(checkingPaths: true) }

    /// `checkingPaths: false` leaves the existence checks to `Watcher.start()`, which reports them as typed
    /// `WardenError`s (`pathMissing`, `notADirectory`, `permissionDenied`).
    func validate(checkingPaths: Bool) throws(ConfigError) {
        var names = Set<String>()
        for d in directories {
            guard ConfigFileParser.isValidName(d.name) else {
                throw ConfigError(message: "bad directory name `\(d.name)`: expected letters, digits, `_` or `-`")
            }
            guard names.insert(d.name).inserted else {
                throw ConfigError(message: "directory name `\(d.name)` is registered twice; names must be unique")
            }
            if checkingPaths, !d.createIfMissing,
                let problem = PathResolver.directoryProblem(
                    PathResolver.absolute(d.path, relativeTo: PathResolver.currentDirectory()))
            {
                throw ConfigError(message: "dir.\(d.name).path: \(problem)")
            }
        }
        if let (a, b) = PathResolver.firstOverlap(
            directories.map {
                var d = $0; d.path = PathResolver.absolute(d.path, relativeTo: PathResolver.currentDirectory());
                return d
            })
        {
            throw ConfigError(
                message: "dir.\(b.name).path overlaps dir.\(a.name).path; registered directories must not nest")
        }
        try validateLimits()
        try validateOwnFiles()
        _ = try checkRoots()
        try validateRelations()
        if checkingPaths { try validateClientLocks(checkingFiles: true) }
    }

    /// The rules that tie keys together: watermarks in order, idle deferral with a quota, groups with members.
    func validateRelations() throws(ConfigError) {
        for d in directories {
            let p = "dir.\(d.name)."
            if d.quota > 0, d.trimTo.bytes(of: d.quota) >= d.trimAt.bytes(of: d.quota) {
                throw ConfigError(
                    key: p + "trim_to",
                    message:
                        "\(p)trim_to (\(d.trimTo.configText)) must be below \(p)trim_at (\(d.trimAt.configText)): a trim would not make room"
                )
            }
            if d.trimAfterIdle != nil && d.quota == 0 {
                throw ConfigError(
                    key: p + "trim_after_idle",
                    message:
                        "\(p)trim_after_idle defers quota trims, but \(p)quota is not set; add a quota or drop the key")
            }
            if let hard = d.hardQuota, d.quota > 0, hard.bytes(of: d.quota) < d.quota {
                throw ConfigError(
                    key: p + "hard_quota",
                    message: "\(p)hard_quota (\(hard.configText)) is below the quota; expected 100% or more")
            }
            if let g = d.group, group(named: g) == nil {
                throw ConfigError(
                    key: p + "group", message: "\(p)group names \(g), but there is no group.\(g).quota; add it")
            }
        }
        for g in groups where !directories.contains(where: { $0.group == g.name }) {
            throw ConfigError(
                key: "group.\(g.name).quota",
                message: "group.\(g.name) has no member; add `dir.<name>.group = \(g.name)`")
        }
        try validateWatermarks()
        try validateClientLocks(checkingFiles: false)
    }

    /// `low_disk_target` needs a `low_disk_free` and is at least it, wherever both are shares or both sizes (a
    /// share against a size depends on the filesystem: at run time the purge stops at the higher of the two).
    private func validateWatermarks() throws(ConfigError) {
        if lowDiskTarget != nil, lowDiskFree == nil, !directories.contains(where: { $0.lowDiskFree != nil }) {
            throw ConfigError(
                key: "low_disk_target",
                message:
                    "low_disk_target says where a low-disk purge stops, but no low_disk_free starts one; add low_disk_free or drop the key"
            )
        }
        if let target = lowDiskTarget, let free = lowDiskFree, Self.isBelow(target, free) {
            throw ConfigError(
                key: "low_disk_target",
                message:
                    "low_disk_target (\(target.configText)) is below low_disk_free (\(free.configText)); expected the target at or above the threshold: a purge stops there"
            )
        }
        for d in directories {
            let p = "dir.\(d.name)."
            guard let target = d.lowDiskTarget ?? lowDiskTarget else { continue }
            let key =
                d.lowDiskTarget != nil
                ? p + "low_disk_target" : d.lowDiskFree != nil ? p + "low_disk_free" : "low_disk_target"
            guard let free = d.lowDiskFree ?? lowDiskFree else {
                guard d.lowDiskTarget != nil else { continue }
                throw ConfigError(
                    key: key,
                    message:
                        "\(key) says where a low-disk purge stops, but no low_disk_free starts one for dir.\(d.name); add low_disk_free or drop the key"
                )
            }
            if Self.isBelow(target, free) {
                throw ConfigError(
                    key: key,
                    message:
                        "low_disk_target (\(target.configText)) is below low_disk_free (\(free.configText)) for dir.\(d.name) (\(key)); expected the target at or above the threshold: a purge stops there"
                )
            }
        }
    }

    /// Whether `a` is below `b` whatever the filesystem (false when one is a share and the other a size).
    private static func isBelow(_ a: SizeLimit, _ b: SizeLimit) -> Bool {
        switch (a, b) {
        case (.percent(let x), .percent(let y)): x < y
        case (.bytes(let x), .bytes(let y)): x < y
        default: false
        }
    }
}

extension WardenSettings {
    /// Parses a size as the config file does (`500MB`, `2GiB`, `4096`): decimal units are powers of 1000, binary
    /// units powers of 1024. `nil` when malformed.
    public static func parseSize(_ text: String) -> Int64? { ValueParsers.size(text) }

    /// Parses config text from `source` (used in error messages); relative paths resolve against
    /// `relativeTo` (default: the current directory). `~` and `$NAME` in path values are expanded as in a file.
    public static func parse(
        _ text: String, source: String, relativeTo base: String?,
        checkingLockFiles: Bool = false
    ) throws(ConfigError) -> WardenSettings {
        var parser = ConfigFileParser(file: source)
        parser.checksLockFiles = checkingLockFiles
        return try parser.parse(text, baseDirectory: base ?? PathResolver.currentDirectory())
    }
}
