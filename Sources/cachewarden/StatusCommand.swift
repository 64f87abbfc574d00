import CacheWarden
import CacheWardenCommandLine
import CacheWardenService
import FoundationEssentials
import Glibc

/// `cachewarden status`: one row per directory (total, files, quota, use, oldest file, free space), from the
/// running daemon's memory when one answers, else from a one-shot scan in observe mode.
struct StatusCommand: CLICommand {
    static let spec = CommandSpec(
        "status",
        abstract: "Print a size report per directory: a table (with usage bars on a terminal) or JSON lines.",
        discussion: """
            Asks the running daemon (its control socket) first: the answer comes from memory, without a rescan. \
            When no daemon answers, the directories of --config or --dir (or of the default config file, see \
            docs/defaults.md) are scanned once in observe mode (nothing can be deleted) and one line on stderr says \
            so. --scan always scans.
            """,
        options: SettingsOptions.options + DaemonOptions.options + [
            .flag("json", help: "One JSON object per directory instead of a table."),
            .flag("si", help: "Units of 1000 (kB, MB, GB)."),
            .flag("iec", help: "Units of 1024 (KiB, MiB, GiB)."),
            .flag("scan", help: "Scan the directories even when a daemon answers."),
        ]
    )

    var source: SettingsOptions
    var daemon: DaemonOptions
    var json: Bool
    var si: Bool
    var iec: Bool
    var scan: Bool

    init(_ arguments: ParsedArguments) throws {
        source = SettingsOptions(arguments)
        daemon = DaemonOptions(arguments)
        json = arguments.flag("json")
        si = arguments.flag("si")
        iec = arguments.flag("iec")
        scan = arguments.flag("scan")
        guard !(si && iec) else { throw arguments.usageError("give --si or --iec, not both") }
    }

    func run() throws {
        // With --control-socket alone, no daemon there is an error (no fallback to the default config's scan).
        let source = daemon.controlSocket == nil ? self.source.withDefaultConfig() : self.source
        let (dirs, groups) = try report(source)
        let binary = iec || (!si && Self.configUsesBinaryUnits(source.config))
        let now = Date()
        if json {
            for r in dirs { print(r.jsonLine(now: now), terminator: "") }
            return
        }
        printTable(dirs, binary: binary, now: now)
        for g in groups {
            let use = ByteText.percent(g.total, of: g.quota)
            print(
                "group \(g.name): \(Self.size(g.total, binary)) of \(Self.size(g.quota, binary)) (\(use)) shared by \(g.members.joined(separator: ", "))"
            )
        }
    }

    /// From the daemon when it answers (not with --dir or --scan); else a scan, announced on stderr.
    private func report(_ source: SettingsOptions) throws -> ([DirectoryStatus], [GroupStatus]) {
        var noDaemon: String?
        if source.dir == nil && !scan {
            let paths = try daemon.clientPaths(config: source.config)
            let client: ControlClient?
            do throws(ControlClientError) { client = try DaemonOptions.firstAnswering(paths) } catch {
                // A socket this user may not use: its daemon's report is out of reach, a scan of the config is not.
                guard source.config != nil else { throw error }
                client = nil
                noDaemon = error.description
            }
            if let client {
                let status = try client.status()
                return (status.dirs, status.groups)
            }
            let path = paths.joined(separator: " or ")
            noDaemon = noDaemon ?? "no daemon answers on \(path)"
            guard source.config != nil else {
                if daemon.controlSocket == nil { throw DefaultConfig.missing(noDaemonAt: path) }
                throw DaemonUnavailable(
                    message: "no daemon answers on \(path); give --config FILE or --dir PATH to scan instead")
            }
        }
        let settings = try source.load()
        if let noDaemon {
            StandardStreams.error("cachewarden: \(noDaemon); scanning the directories instead (observe mode)\n")
        }
        // A report is a scan in observe mode: nothing is watched, and nothing can be deleted.
        let dirs = try Watcher.report(settings)
        let groups = settings.groups.map { g in
            let members = dirs.filter { $0.group == g.name }
            return GroupStatus(
                name: g.name, total: members.reduce(Int64(0)) { $0 + $1.totals.total }, quota: g.quota,
                members: members.map(\.totals.dir))
        }
        return (dirs, groups)
    }

    private func printTable(_ dirs: [DirectoryStatus], binary: Bool, now: Date) {
        let tty = isatty(1) == 1
        var rows = [["NAME", "PATH", "TOTAL", "FILES", "QUOTA", "USE", "PROTECTED", "OLDEST", "FS FREE", "BACKEND"]]
        for r in dirs {
            let use =
                r.totals.quota > 0
                ? ByteText.percent(r.totals.total, of: r.totals.quota) + (tty ? " " + Self.bar(Self.percent(r)) : "")
                : "-"
            rows.append([
                r.totals.dir, r.totals.path, Self.size(r.totals.total, binary), String(r.totals.files),
                r.totals.quota > 0 ? Self.size(r.totals.quota, binary) : "none", use,
                r.protectedBytes > 0 ? Self.size(r.protectedBytes, binary) : "-",
                r.oldest.map { Self.age(now.timeIntervalSince($0)) } ?? "-",
                r.filesystemFree.map { Self.size($0, binary) } ?? "?", r.lost == nil ? r.backend ?? "-" : "lost",
            ])
        }
        let widths = (0..<rows[0].count).map { c in rows.map { $0[c].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { StandardStreams.padded($1, to: widths[$0]) }.joined(separator: "  "))
        }
        for r in dirs { if let why = r.lost { print("\(r.totals.dir) is lost: \(r.totals.path) \(why)") } }
        for r in dirs { if let d = r.deferred { print(Self.deferredLine(d)) } }
    }

    /// `uv: quota trim deferred for 42s: the client's lock .lock of uv is held by pid 4242 (uv run python)`.
    static func deferredLine(_ d: DeferredTrim) -> String {
        "\(d.dir): \(d.reason.rawValue) trim deferred for \(age(d.waitedSeconds)): \(d.busy)"
            + (d.overdue ? " (past client_lock_wait)" : "")
            + (d.retrySeconds.map { "; next try in \(Int($0.rounded(.up)))s" } ?? "")
    }

    static func percent(_ r: DirectoryStatus) -> Double { r.usePercent ?? 0 }

    static func bar(_ percent: Double) -> String {
        let filled = min(10, Int((percent / 10).rounded()))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 10 - filled) + "]"
    }

    static func size(_ bytes: Int64, _ binary: Bool) -> String { ByteText.format(bytes, binary: binary) }

    static func age(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        if s < 120 { return "\(s)s" }
        if s < 7200 { return "\(s / 60)m" }
        if s < 172_800 { return "\(s / 3600)h" }
        return "\(s / 86400)d"
    }

    /// Whether the config file wrote its quotas in 1024-based units (the report then uses them too).
    static func configUsesBinaryUnits(_ file: String?) -> Bool {
        guard let file, let text = FileContents.read(file, limit: WardenSettings.maxConfigBytes) else { return false }
        return text.split(separator: "\n").contains { line in
            line.contains("quota") && line.split(separator: "#").first.map { $0.contains("iB") } == true
        }
    }
}
