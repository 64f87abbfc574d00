import CacheWarden
import CacheWardenCommandLine
import Logging

/// `cachewarden run`: watch in the foreground and print one JSON line per event on stdout.
struct RunCommand: CLICommand {
    static let spec = CommandSpec(
        "run",
        abstract: "Watch the registered directories in the foreground, printing JSON lines on stdout.",
        discussion: """
            Signals: SIGINT/SIGTERM print a `stop` line per directory and exit 0; SIGUSR1 prints a `status` line \
            per directory; SIGHUP re-reads the config file (a bad file keeps the running settings and prints an \
            `error` line). With a control socket (control_socket, --control-socket, or systemd's \
            RUNTIME_DIRECTORY) it answers `cachewarden status`, `trim`, `clear`, `reload` and `events`; with \
            metrics_file it keeps a Prometheus text file for node_exporter; under systemd (NOTIFY_SOCKET) it \
            reports READY, STATUS, RELOADING, STOPPING and feeds the watchdog.
            """,
        options: SettingsOptions.options + DaemonOptions.options + [
            .flag("dry-run", help: "Report the evictions policies would do, and delete nothing."),
            .flag(
                "exit-on-epipe", help: "Exit (status 0) when stdout is closed, instead of enforcing quotas silently."),
            .flag("debug", help: "Log every inotify record (with libinotifytools' mask names) on stderr."),
            .value(
                "max-buffered", "size",
                help:
                    "Event lines held for a slow stdout reader before lines are dropped (and a `dropped` line says how many), e.g. 8MiB (the default)."
            ),
        ]
    )

    var source: SettingsOptions
    var daemon: DaemonOptions
    var dryRun: Bool
    var exitOnEpipe: Bool
    var debug: Bool
    var maxBuffered: Int64

    init(_ arguments: ParsedArguments) throws {
        source = SettingsOptions(arguments)
        daemon = DaemonOptions(arguments)
        dryRun = arguments.flag("dry-run")
        exitOnEpipe = arguments.flag("exit-on-epipe")
        debug = arguments.flag("debug")
        let text = arguments.value("max-buffered") ?? "8MiB"
        guard let limit = WardenSettings.parseSize(text), limit > 0 else {
            throw arguments.usageError("bad value `\(text)` for --max-buffered: expected a size like 8MiB or 64KB")
        }
        maxBuffered = limit
    }

    func run() throws {
        let (settings, source) = try daemon.settings(from: source)
        OpenFileLimit.raiseToHard() // each client lock file taken is held open (huggingface_hub: one per blob)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        var logger = Logger(label: "cachewarden")
        logger.logLevel = debug ? .debug : .info
        DefaultConfig.prepareFolder(of: settings.controlSocket)
        let service = RunService(
            settings: settings, configFile: source.config, mode: dryRun ? .dryRun : .enforce,
            logger: logger, bufferLimit: Int(maxBuffered), exitOnEpipe: exitOnEpipe)
        try service.run()
    }
}
