import CacheWarden
import CacheWardenCommandLine
import CacheWardenService
import Glibc

/// `cachewarden clear`: remove the files of some or all directories, with progress phases as JSON lines.
struct ClearCommand: CLICommand {
    static let spec = CommandSpec(
        "clear",
        abstract: "Remove the files of the named directories (all when none is named), printing progress phases.",
        discussion:
            "When a daemon answers on its control socket, it clears (its totals stay exact) and one reply line is printed: {\"ok\":true,\"command\":\"clear\",\"dirs\":[…],\"removed\":N,\"freed\":BYTES}. Otherwise a one-shot clear of --config's or --dir's directories prints the phases: pre_calculating, cleaning, post_calculating, done (with freed and removed). The roots and their subdirectories stay (dir.<name>.prune_dirs = true removes emptied subdirectories); protected files stay.",
        options: SettingsOptions.options + DaemonOptions.options + [
            .flag("dry-run", help: "Report what would be removed, and delete nothing.")
        ] + LockWait.options,
        arguments: [ArgumentSpec("name", help: "Names of the directories to clear (default: all).", repeated: true)]
    )

    var source: SettingsOptions
    var daemon: DaemonOptions
    var dryRun: Bool
    var names: [String]
    var wait: LockWait

    init(_ arguments: ParsedArguments) throws {
        source = SettingsOptions(arguments)
        daemon = DaemonOptions(arguments)
        dryRun = arguments.flag("dry-run")
        names = arguments.arguments("name")
        wait = try LockWait(arguments)
    }

    func run() throws {
        let source = daemon.controlSocket == nil ? self.source.withDefaultConfig() : self.source
        let what = "clear" + (names.isEmpty ? "" : " " + names.joined(separator: " "))
        if source.dir == nil, let client = try daemon.connect(config: source.config) {
            let reply = try wait.run(what, { try client.clear(names, dryRun: dryRun) }, busy: LockWait.daemonBusy)
            print(JSONValue.object(reply).jsonText)
            return
        }
        // A socket named on the command line is the daemon meant: nobody there is an error, not a reason to
        // clear without it.
        if let socket = daemon.controlSocket {
            throw DaemonUnavailable(
                message:
                    "no daemon answers on \(DaemonOptions.absolute(socket)); nothing cleared (leave out --control-socket to clear without a daemon)"
            )
        }
        let settings = try source.load()
        for name in names where !settings.directories.contains(where: { $0.name == name }) {
            throw CLIUsageError(
                message:
                    "no directory named \(name); known: \(settings.directories.map(\.name).joined(separator: ", "))")
        }
        signal(SIGPIPE, SIG_IGN)
        OpenFileLimit.raiseToHard() // each client lock file taken is held open (huggingface_hub: one per blob)
        // Without a daemon the trees are read only once no client holds its lock (a take and a release each);
        // the clear then takes the locks itself, and a client that took one in between makes it wait again.
        try wait.run(
            what,
            {
                if !dryRun, let busy = Watcher.clientLockBusy(settings, names: names) {
                    throw WardenError.clientLockBusy(busy)
                }
                try clearOnce(settings)
            },
            busy: { error in
                guard case .clientLockBusy(let busy)? = error as? WardenError else { return nil }
                return (busy, settings.clientLockWait)
            })
    }

    /// A one-shot clear without a daemon, printing its phases.
    private func clearOnce(_ settings: WardenSettings) throws {
        let sink = JSONLinesSink()
        let tty = isatty(2) == 1
        // A one-shot clear: only the named directories are read, nothing is watched, no quota or age policy runs
        // anywhere; a dry run is its own mode, whose deleter cannot unlink.
        try Watcher.clear(settings, names: names, mode: dryRun ? .dryRun : .enforce, sinks: [sink]) { p in
            guard tty else { return }
            let filled = Int(p.progress * 30)
            let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: 30 - filled)
            StandardStreams.error(
                "\r\(StandardStreams.padded(p.phase.rawValue, to: 16)) [\(bar)] \(Int(p.progress * 100))%\(p.phase == .done ? "\n" : "")"
            )
        }
    }
}
