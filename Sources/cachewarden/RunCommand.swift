import ArgumentParser
import CacheWarden
import Logging

/// `cachewarden run`: watch in the foreground and print one JSON line per event on stdout.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Watch the registered directories in the foreground, printing JSON lines on stdout.",
        discussion: """
            Signals: SIGINT/SIGTERM print a `stop` line per directory and exit 0; SIGUSR1 prints a `status` line \
            per directory; SIGHUP re-reads the config file (a bad file keeps the running settings and prints an \
            `error` line). With a control socket (control_socket, --control-socket, or systemd's \
            RUNTIME_DIRECTORY) it answers `cachewarden status`, `trim`, `clear`, `reload` and `events`; with \
            metrics_file it keeps a Prometheus text file for node_exporter; under systemd (NOTIFY_SOCKET) it \
            reports READY, STATUS, RELOADING, STOPPING and feeds the watchdog.
            """
    )

    @OptionGroup var source: SettingsOptions
    @OptionGroup var daemon: DaemonOptions

    @Flag(name: .long, help: "Report the evictions policies would do, and delete nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Exit (status 0) when stdout is closed, instead of enforcing quotas silently.")
    var exitOnEpipe = false

    @Flag(name: .long, help: "Log every inotify record (with libinotifytools' mask names) on stderr.")
    var debug = false

    @Option(name: .long, help: ArgumentHelp("Event lines held for a slow stdout reader before lines are dropped (and a `dropped` line says how many), e.g. 8MiB.", valueName: "size"))
    var maxBuffered: String = "8MiB"

    func validate() throws {
        guard let limit = WardenSettings.parseSize(maxBuffered), limit > 0 else {
            throw ValidationError("bad value `\(maxBuffered)` for --max-buffered: expected a size like 8MiB or 64KB")
        }
    }

    func run() throws {
        let source = self.source.withDefaultConfig()
        let settings = try source.load()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        var logger = Logger(label: "cachewarden")
        logger.logLevel = debug ? .debug : .info
        let socket = daemon.daemonPath(settings, userInstance: self.source.usesDefaultConfig)
        DefaultConfig.prepareFolder(of: socket)
        let service = RunService(settings: settings, configFile: source.config, socketPath: socket,
                                 mode: dryRun ? .dryRun : .enforce, logger: logger,
                                 bufferLimit: Int(WardenSettings.parseSize(maxBuffered) ?? 8 << 20), exitOnEpipe: exitOnEpipe)
        try service.run()
    }
}
