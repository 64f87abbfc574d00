import ArgumentParser
import CacheWarden
import Dispatch
import Foundation
import Glibc
import Logging

/// `cachewarden run`: watch in the foreground and print one JSON line per event on stdout.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Watch the registered directories in the foreground, printing JSON lines on stdout.",
        discussion: """
            Signals: SIGINT/SIGTERM print a `stop` line per directory and exit 0; SIGUSR1 prints a `status` line \
            per directory; SIGHUP re-reads the config file (a bad file keeps the running settings and prints an \
            `error` line).
            """
    )

    @OptionGroup var source: SettingsOptions

    @Flag(name: .long, help: "Report the evictions policies would do, and delete nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Exit (status 0) when stdout is closed, instead of enforcing quotas silently.")
    var exitOnEpipe = false

    @Flag(name: .long, help: "Log every inotify record (with libinotifytools' mask names) on stderr.")
    var debug = false

    @Option(name: .long, help: ArgumentHelp("Event lines held for a slow stdout reader before lines are dropped (and a `dropped` line says how many), e.g. 8MiB.", valueName: "size"))
    var maxBuffered: String = "8MiB"

    func run() throws {
        let settings = try source.load()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        var logger = Logger(label: "cachewarden")
        logger.logLevel = debug ? .debug : .info
        signal(SIGPIPE, SIG_IGN)
        guard let limit = WardenSettings.parseSize(maxBuffered), limit > 0 else {
            throw CLIUsageError(message: "bad value `\(maxBuffered)` for --max-buffered: expected a size like 8MiB or 64KB")
        }
        let exitOnEpipe = self.exitOnEpipe
        let sink = JSONLinesSink(bufferLimit: Int(limit)) {
            if exitOnEpipe { Glibc.exit(0) }
            FileHandle.standardError.write(Data("cachewarden: stdout is closed (EPIPE); events are discarded from now on, quotas are still enforced\n".utf8))
        }
        let watcher = Watcher(settings: settings, mode: dryRun ? .dryRun : .enforce, sinks: [sink], logger: logger)

        // Handlers go in before `start()`: a signal that arrives while the trees are read (or right after the
        // `ready` lines) must not meet the default action, which for SIGHUP/SIGUSR1 is to terminate. Their
        // blocks run on the main queue, that is once `dispatchMain()` runs.
        let configFile = source.config
        var sources: [DispatchSourceSignal] = []
        func on(_ signo: Int32, _ body: @escaping @Sendable () -> Void) {
            signal(signo, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: signo, queue: .main)
            s.setEventHandler(handler: body)
            s.resume()
            sources.append(s)
        }
        let shutdown: @Sendable () -> Void = {
            watcher.stop()   // finishes the sink: every line is written
            Glibc.exit(0)
        }
        on(SIGINT, shutdown)
        on(SIGTERM, shutdown)
        on(SIGUSR1) { watcher.requestStatus() }
        on(SIGHUP) {
            guard let configFile else {
                sink.send(WardenEvent(.error(WardenIssue(message: "SIGHUP ignored: no config file to re-read (quick mode)", kind: "reload"))))
                return
            }
            do {
                try watcher.reload(try WardenSettings.load(configFile: configFile))
            } catch {
                sink.send(WardenEvent(.error(WardenIssue(message: "reload failed, keeping the running settings: \(error)", kind: "reload"))))
            }
        }
        try watcher.start()
        withExtendedLifetime(sources) { dispatchMain() }
    }
}
