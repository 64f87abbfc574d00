import CacheWarden
import CacheWardenCommandLine

/// `cachewarden check`: validate a config and print the effective settings (exit 0), or the error (exit 2).
/// What it accepts, `run` runs: both read the settings through `SettingsOptions.load()`, so a config that
/// registers no directory is an error in both. Values a profile filled in are marked with
/// `# from profile <name>`. It changes nothing on disk.
struct CheckCommand: CLICommand {
    static let spec = CommandSpec(
        "check",
        abstract:
            "Validate the settings and print them as they will be enforced (exit 0), or print the error (exit 2).",
        options: SettingsOptions.options
    )

    var source: SettingsOptions
    /// No `--control-socket` here: the socket `run` would listen on by default, which no root may hold either.
    var daemon: DaemonOptions

    init(_ arguments: ParsedArguments) {
        source = SettingsOptions(arguments)
        daemon = DaemonOptions(arguments)
    }

    func run() throws {
        let s = try daemon.settings(from: source).0.resolved()
        for warning in s.rootWarnings + s.keyWarnings { StandardStreams.error("cachewarden: warning: \(warning)\n") }
        print("# cachewarden \(CacheWardenVersion.current)")
        print("size_basis = \(s.sizeBasis.rawValue)")
        if let e = s.expireInterval { print("expire_interval = \(e)s") }
        if let t = s.lowDiskFree { print("low_disk_free = \(t.configText)") }
        if let t = s.lowDiskTarget ?? s.lowDiskFree { print("low_disk_target = \(t.configText)") }
        print("low_disk_action = \(s.lowDiskAction.rawValue)")
        print("low_disk_interval = \(s.lowDiskInterval)s")
        print("backend = \(s.backend.rawValue)")
        print("poll_interval = \(s.pollInterval)s")
        print("events_to = \(s.eventsTo.rawValue)")
        print("client_lock_wait = \(s.clientLockWait)s")
        for g in s.groups {
            print("group.\(g.name).quota = \(g.quota)B")
            print("group.\(g.name).trim_to = \(g.trimTo.configText)")
        }
        for d in s.directories { print(Self.lines(d).joined(separator: "\n")) }
    }

    /// One directory's effective settings, one key per line.
    static func lines(_ d: DirectorySettings) -> [String] {
        let fromProfile = Set(d.keysFromProfile)
        let p = "dir.\(d.name)."
        var out: [(String, String?)] = [
            ("path", d.path), ("profile", d.profile.rawValue), ("quota", "\(d.quota)B"),
            ("trim_at", d.trimAt.configText), ("trim_to", d.trimTo.configText),
            ("hard_quota", d.hardQuota?.configText), ("trim_after_idle", d.trimAfterIdle.map { "\($0)s" }),
            ("max_files", d.maxFiles.map(String.init)), ("max_age", d.maxAge.map { "\($0)s" } ?? "manual"),
            ("min_age", d.minAge.map { "\($0)s" }), ("order", d.order.rawValue),
            ("protect", d.protect.isEmpty ? nil : d.protect.joined(separator: ", ")),
            ("exclude", d.exclude.isEmpty ? nil : d.exclude.joined(separator: ", ")),
            ("spare_open", "\(d.spareOpen)"), ("evict_unit", d.evictUnit.configText),
            ("client_lock", d.clientLock?.configText),
            ("evict_pointers", d.evictPointers.isEmpty ? nil : d.evictPointers.joined(separator: ", ")),
            ("group", d.group), ("weight", d.group == nil ? nil : "\(d.weight)"),
            ("delete_rate", d.deleteRate.map { "\($0)/s" }), ("count_directories", "\(d.countDirectories)"),
            ("one_file_system", "\(d.oneFileSystem)"), ("allow_any_path", d.allowAnyPath ? "true" : nil),
            ("prune_dirs", "\(d.pruneDirs)"),
            ("low_disk_free", d.lowDiskFree?.configText), ("low_disk_target", d.lowDiskTarget?.configText),
            ("backend", d.backend?.rawValue), ("poll_interval", d.pollInterval.map { "\($0)s" }),
        ]
        out.removeAll { $0.1 == nil }
        return out.map { key, value in
            "\(p)\(key) = \(value ?? "")" + (fromProfile.contains(key) ? "  # from profile \(d.profile.rawValue)" : "")
        }
    }
}
