import Glibc

/// Reads the YAML-free `key = value` config file into `WardenSettings`.
///
/// Syntax: one `key = value` per line; `#` at the start of a line or after whitespace starts a comment (so a
/// path like `a#b` survives); blank lines are ignored; whitespace around keys and values is trimmed. The keys are
/// those of `ConfigKey.all`; the tables below say how each one's value is read.
struct ConfigFileParser {
    // returns the expectation when the value is bad
    typealias Apply<Target> = @Sendable (inout Target, String) -> String?

    /// Keys that apply to the whole watcher.
    static let globalKeys: [String: Apply<WardenSettings>] = [
        "size_basis": { s, v in
            guard let b = SizeBasis(rawValue: v) else { return "expected allocated or apparent" }
            s.sizeBasis = b; return nil
        },
        "expire_interval": { s, v in duration(v, .interval, like: "30s, 5m, 1h") { s.expireInterval = $0 } },
        "low_disk_free": { s, v in threshold(v, like: "10% or a size like 5GB") { s.lowDiskFree = $0 } },
        "low_disk_target": { s, v in threshold(v, like: "20% or a size like 10GB") { s.lowDiskTarget = $0 } },
        "low_disk_action": { s, v in
            guard let a = LowDiskAction(rawValue: v) else { return "expected warn or trim" }
            s.lowDiskAction = a; return nil
        },
        "low_disk_interval": { s, v in duration(v, .interval, like: "30s, 5m") { s.lowDiskInterval = $0 } },
        "control_socket": { s, v in
            s.controlSocket = v; return nil
        },
        "control_socket_mode": { s, v in
            guard let m = UInt16(v, radix: 8), m & 0o600 == 0o600, m <= 0o666 else {
                return "expected an octal mode like 0600 or 0660 (the owner must be able to read and write)"
            }
            s.controlSocketMode = m; return nil
        },
        "metrics_file": { s, v in
            guard v.hasSuffix(".prom") else {
                return "expected a path ending in .prom (node_exporter reads only those)"
            }
            s.metricsFile = v; return nil
        },
        "metrics_interval": { s, v in duration(v, .interval, like: "15s, 1m") { s.metricsInterval = $0 } },
        "backend": { s, v in
            guard let b = BackendChoice(rawValue: v) else { return ValueParsers.backendExpectation }
            s.backend = b; return nil
        },
        "poll_interval": { s, v in duration(v, .interval, like: "30s, 5m") { s.pollInterval = $0 } },
        "client_lock_wait": { s, v in duration(v, .interval, like: "30m, 1h, 1d") { s.clientLockWait = $0 } },
        "events_to": { s, v in
            guard let e = EventsDestination(rawValue: v) else { return "expected stdout, journal or both" }
            s.eventsTo = e; return nil
        },
    ]

    /// Keys of the form `dir.<name>.<field>`.
    static let directoryKeys: [String: Apply<DirectorySettings>] = [
        "path": { d, v in
            d.path = v; return nil
        },
        "quota": { d, v in
            guard let q = ValueParsers.size(v) else {
                return ValueParsers.sizeProblem(v)
                    ?? "expected a size like 500MB or 2GiB (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; 0 = no quota)"
            }
            d.quota = q; return nil
        },
        "max_age": { d, v in
            if v == "manual" { d.maxAge = nil; return nil }
            return duration(v, .age, like: "manual, 3d, 1w, 2w, 1mo or <N> with unit s, m, h, d, w, mo") {
                d.maxAge = $0
            }
        },
        "order": { d, v in
            guard let o = AgeOrder(rawValue: v) else { return "expected mtime, atime, ctime, btime or opened" }
            d.order = o; return nil
        },
        "protect": { d, v in
            guard let g = ValueParsers.globs(v) else { return "expected comma-separated globs like *.db, keep/**" }
            d.protect = g; return nil
        },
        "exclude": { d, v in
            guard let g = ValueParsers.globs(v) else { return "expected comma-separated globs like URLCACHE/**" }
            d.exclude = g; return nil
        },
        "one_file_system": { d, v in
            guard let b = ValueParsers.bool(v) else { return "expected true or false" }
            d.oneFileSystem = b; return nil
        },
        "prune_dirs": { d, v in
            guard let b = ValueParsers.bool(v) else { return "expected true or false" }
            d.pruneDirs = b; return nil
        },
        "low_disk_free": { d, v in threshold(v, like: "10% or a size like 5GB") { d.lowDiskFree = $0 } },
        "low_disk_target": { d, v in threshold(v, like: "20% or a size like 10GB") { d.lowDiskTarget = $0 } },
        "create": { d, v in
            guard let b = ValueParsers.bool(v) else { return "expected true or false" }
            d.createIfMissing = b; return nil
        },
        "allow_any_path": { d, v in
            guard let b = ValueParsers.bool(v) else { return "expected true or false" }
            d.allowAnyPath = b; return nil
        },
        "count_directories": { d, v in
            guard let b = ValueParsers.bool(v) else { return "expected true or false" }
            d.countDirectories = b; return nil
        },
        "trim_to": { d, v in
            limit(v, 0...100, like: "a share of the quota like 50% or a size like 400MB") { d.trimTo = $0 }
        },
        "trim_at": { d, v in
            limit(v, 0...100, like: "a share of the quota like 90% or a size like 900MB") { d.trimAt = $0 }
        },
        "hard_quota": { d, v in
            limit(v, 100...10_000, like: "100% or more of the quota, like 200%, or a size like 2GB") {
                d.hardQuota = $0
            }
        },
        "max_files": { d, v in
            guard let n = Int(v), n > 0 else { return "expected a number of files, like 100000" }
            d.maxFiles = n; return nil
        },
        "trim_after_idle": { d, v in duration(v, .interval, like: "30s, 5m, 1h") { d.trimAfterIdle = $0 } },
        "spare_open": { d, v in
            guard let b = ValueParsers.bool(v) else { return "expected true or false" }
            d.spareOpen = b; return nil
        },
        "min_age": { d, v in duration(v, .age, like: "10m, 2h, 1d") { d.minAge = $0 } },
        "evict_unit": { d, v in
            guard let u = ValueParsers.unit(v) else { return "expected file, entry or depth:N (N ≥ 1)" }
            d.evictUnit = u; return nil
        },
        "evict_pointers": { d, v in
            if ValueParsers.bool(v) == false { d.evictPointers = []; return nil }
            guard ValueParsers.bool(v) == nil, let g = ValueParsers.globs(v) else {
                return "expected the folders that hold pointers (comma-separated globs like wheels-v*), or false"
            }
            d.evictPointers = g; return nil
        },
        "profile": { d, v in
            guard let p = CacheProfile(rawValue: v) else {
                return "expected \(CacheProfile.allCases.map(\.rawValue).joined(separator: ", "))"
            }
            d.profile = p; return nil
        },
        "client_lock": { d, v in clientLock(v) { d.clientLock = $0 } },
        "group": { d, v in
            guard isValidName(v) else {
                return "expected a group name (letters, digits, `_` or `-`) set with group.<name>.quota"
            }
            d.group = v; return nil
        },
        "weight": { d, v in
            guard let n = Int(v), n > 0, n <= 1_000_000 else { return "expected a positive whole number like 1 or 3" }
            d.weight = n; return nil
        },
        "delete_rate": { d, v in
            guard let n = ValueParsers.rate(v) else { return "expected files per second like 100/s" }
            d.deleteRate = n; return nil
        },
        "backend": { d, v in
            guard let b = BackendChoice(rawValue: v) else { return ValueParsers.backendExpectation }
            d.backend = b; return nil
        },
        "poll_interval": { d, v in duration(v, .interval, like: "30s, 5m") { d.pollInterval = $0 } },
    ]

    /// Keys of the form `group.<name>.<field>`.
    static let groupKeys: [String: Apply<GroupSettings>] = [
        "quota": { g, v in
            guard let q = ValueParsers.size(v), q > 0 else {
                return ValueParsers.sizeProblem(v) ?? "expected a size like 10GB"
            }
            g.quota = q; return nil
        },
        "trim_to": { g, v in
            limit(v, 0...100, like: "a share of the quota like 50% or a size like 4GB") { g.trimTo = $0 }
        },
    ]

    let file: String
    /// The config file's absolute path, when the text came from one: no registered root may hold it.
    var configPath: String?
    /// Whether the lock files `client_lock` names are looked at on disk (`checkClientLocks`): for `check` and `run`
    /// only, never for a command that merely reads the config.
    var checksLockFiles = false
    /// The home directory and environment that `~` and `$NAME` in paths stand for (`PathExpansion`).
    var locations = DefaultLocations.current

    /// A directory's keys as read so far.
    private struct DirectoryDraft {
        var settings: DirectorySettings
        var firstLine: Int
        var pathLine: Int?
    }

    /// Everything read so far.
    private struct Draft {
        var settings = WardenSettings()
        var seen: [String: Int] = [:]
        var directories: [String: DirectoryDraft] = [:]
        var order: [String] = []
        var groups: [String: (settings: GroupSettings, line: Int)] = [:]
        var groupOrder: [String] = []
    }

    /// Parses `text` (the contents of `file`); relative paths resolve against `baseDirectory`.
    func parse(_ text: String, baseDirectory: String) throws(ConfigError) -> WardenSettings {
        var draft = Draft()
        // Only `\n` ends a line (`\r\n` too: its `\r` is dropped). Split on the scalar, not on Characters: Swift
        // takes `\r\n` as one Character, and `isNewline` holds for U+000B, U+000C, U+0085, U+2028 and U+2029 too,
        // which would turn one line into two keys and shift every line number after it.
        for (index, scalars) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
        {
            let rawLine = Substring(scalars)
            try read(rawLine.last == "\r" ? rawLine.dropLast() : rawLine, line: index + 1, into: &draft)
        }
        return try finish(draft, baseDirectory: baseDirectory)
    }

    /// One line: a comment, a blank, or a `key = value` applied to the draft.
    private func read(_ rawLine: Substring, line n: Int, into d: inout Draft) throws(ConfigError) {
        if let bad = Self.firstLineBreak(in: rawLine) {
            throw error(n, "line break \(bad) in the line; only \\n ends a line (an editor may show this one as two)")
        }
        let line = Self.stripComment(rawLine).trimmingSpaces
        if line.isEmpty { return }
        if let bad = Self.firstControl(in: line) {
            throw error(n, "control character \(bad) in the line; keys and values are plain text")
        }
        guard let eq = line.firstIndex(of: "=") else { throw error(n, "expected `key = value`, found `\(line)`") }
        let key = line[..<eq].trimmingSpaces
        let value = line[line.index(after: eq)...].trimmingSpaces
        guard !key.isEmpty else { throw error(n, "missing key before `=`; expected `key = value`") }
        if let first = d.seen[key] {
            throw error(n, "duplicate key \(key) (first set on line \(first)); keep one of them")
        }
        d.seen[key] = n
        guard !value.isEmpty else { throw error(n, "\(key) has no value; expected `\(key) = <value>`") }
        if ConfigKey.isKnown(key, in: .global), let apply = Self.globalKeys[key] {
            let value = try expandingPath(value, key: key, line: n)
            if let expected = apply(&d.settings, value) {
                throw error(n, "bad value `\(value)` for \(key): \(expected)")
            }
            return
        }
        let parts = key.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, parts[0] == "dir" || parts[0] == "group" else {
            throw error(
                n,
                "unknown key \(key); expected one of \(ConfigKey.fields(.global).joined(separator: ", ")), dir.<name>.<\(ConfigKey.fields(.directory).joined(separator: "|"))> or group.<name>.<\(ConfigKey.fields(.group).joined(separator: "|"))>"
            )
        }
        if parts[0] == "group" {
            try readGroupKey(name: parts[1], field: parts[2], key: key, value: value, line: n, into: &d)
        } else {
            try readDirectoryKey(name: parts[1], field: parts[2], key: key, value: value, line: n, into: &d)
        }
    }

    private func readGroupKey(
        name: String, field: String, key: String, value: String, line n: Int,
        into d: inout Draft
    ) throws(ConfigError) {
        guard Self.isValidName(name) else {
            throw error(n, "bad group name `\(name)` in \(key): expected letters, digits, `_` or `-`")
        }
        guard ConfigKey.isKnown(field, in: .group), let apply = Self.groupKeys[field] else {
            throw error(
                n, "unknown key \(key); expected group.\(name).<\(ConfigKey.fields(.group).joined(separator: "|"))>")
        }
        var entry = d.groups[name] ?? (GroupSettings(name: name, quota: 0), n)
        if d.groups[name] == nil { d.groupOrder.append(name) }
        if let expected = apply(&entry.settings, value) {
            throw error(n, "bad value `\(value)` for \(key): \(expected)")
        }
        d.groups[name] = entry
    }

    private func readDirectoryKey(
        name: String, field: String, key: String, value: String, line n: Int,
        into d: inout Draft
    ) throws(ConfigError) {
        guard Self.isValidName(name) else {
            throw error(n, "bad directory name `\(name)` in \(key): expected letters, digits, `_` or `-`")
        }
        guard ConfigKey.isKnown(field, in: .directory), let apply = Self.directoryKeys[field] else {
            throw error(
                n, "unknown key \(key); expected dir.\(name).<\(ConfigKey.fields(.directory).joined(separator: "|"))>")
        }
        let value = try expandingPath(value, key: key, line: n)
        var entry =
            d.directories[name] ?? DirectoryDraft(settings: DirectorySettings(name: name, path: ""), firstLine: n)
        if d.directories[name] == nil { d.order.append(name) }
        if let expected = apply(&entry.settings, value) {
            throw error(n, "bad value `\(value)` for \(key): \(expected)")
        }
        if field == "path" { entry.pathLine = n }
        d.directories[name] = entry
    }

    /// Resolves paths and checks what needs every line: each directory has a path, none nests in another.
    private func finish(_ d: Draft, baseDirectory: String) throws(ConfigError) -> WardenSettings {
        var settings = d.settings
        settings.controlSocket = settings.controlSocket.map { PathResolver.absolute($0, relativeTo: baseDirectory) }
        settings.metricsFile = settings.metricsFile.map { PathResolver.absolute($0, relativeTo: baseDirectory) }
        try located(d) { () throws(ConfigError) in try settings.validateOwnFiles() }
        var pathLines: [String: Int] = [:]
        for name in d.order {
            guard var entry = d.directories[name] else { continue }
            guard let pathLine = entry.pathLine else {
                throw error(entry.firstLine, "dir.\(name) has no path; add `dir.\(name).path = /some/folder`")
            }
            entry.settings.path = PathResolver.absolute(entry.settings.path, relativeTo: baseDirectory)
            // A directory to be created is checked when the watcher creates it: parsing never touches the disk.
            if !(entry.settings.createIfMissing && PathResolver.isMissing(entry.settings.path)),
                let problem = PathResolver.directoryProblem(entry.settings.path)
            {
                throw error(pathLine, "dir.\(name).path: \(problem)")
            }
            pathLines[name] = pathLine
            entry.settings.origin = (file, pathLine)
            settings.directories.append(entry.settings)
        }
        if settings.directories.isEmpty {
            var empty = error(1, "no directory registered; expected at least one `dir.<name>.path = /some/folder`")
            empty.registersNothing = true
            throw empty
        }
        if let (a, b) = PathResolver.firstOverlap(settings.directories) {
            throw error(
                pathLines[b.name] ?? 1,
                "dir.\(b.name).path overlaps dir.\(a.name).path (\(a.path)); registered directories must not nest")
        }
        settings.configFile = configPath
        _ = try settings.checkRoots()
        if checksLockFiles { try checkClientLocks(settings.directories, d.seen) }
        for name in d.groupOrder {
            guard let (group, line) = d.groups[name] else { continue }
            guard group.quota > 0 else {
                throw error(line, "group.\(name) has no quota; add `group.\(name).quota = 10GB`")
            }
            settings.groups.append(group)
        }
        try located(d) { () throws(ConfigError) in try settings.validateRelations() }
        return settings
    }

    /// Runs a check of the settings as a whole; its error points at the line of the key at fault.
    private func located(_ d: Draft, _ check: () throws(ConfigError) -> Void) throws(ConfigError) {
        do throws(ConfigError) { try check() } catch {
            throw ConfigError(file: file, line: error.line ?? d.seen[error.key ?? ""] ?? 1, message: error.message)
        }
    }

    /// The first control or format character of `text` but tab, as `U+0000`: a NUL would cut a path short, and
    /// bidirectional overrides or a byte-order mark would make a line read other than it is.
    static func firstControl(in text: String) -> String? {
        text.unicodeScalars.first {
            !isPrintableASCII($0) && $0 != "\t" && [.control, .format].contains($0.properties.generalCategory)
        }.map(codePoint)
    }

    /// What other programs take for a line break, refused anywhere in a line, comments included: U+000B, U+000C,
    /// a `\r` not before the `\n`, U+0085, U+2028 and U+2029, as `U+000B`.
    static func firstLineBreak(in line: Substring) -> String? {
        line.unicodeScalars.first { !isPrintableASCII($0) && $0 != "\n" && Character($0).isNewline }.map(codePoint)
    }

    /// U+0020 to U+007E: most of a config, and neither a control character nor a line break (a fast path: looking
    /// up a scalar's properties costs more than the rest of reading its line).
    private static func isPrintableASCII(_ scalar: Unicode.Scalar) -> Bool { (0x20..<0x7F).contains(scalar.value) }

    /// `U+000B`.
    private static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private func error(_ line: Int, _ message: String) -> ConfigError {
        ConfigError(file: file, line: line, message: message)
    }

    /// Drops a comment: `#` at the start of the line or after whitespace.
    static func stripComment(_ line: Substring) -> Substring {
        var previous: Character = " "
        for index in line.indices {
            let c = line[index]
            if c == "#" && (previous == " " || previous == "\t") { return line[..<index] }
            previous = c
        }
        return line
    }

    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    }
}
