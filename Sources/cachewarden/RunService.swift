import CacheWarden
import CacheWardenService
import Dispatch
import Glibc
import Logging

/// What `cachewarden run` wires around the watcher: the stdout sink and/or the journal's (`events_to`), the
/// control socket, the metrics file and systemd's notify protocol, and the signals. The pipeline itself is wired in the
/// library (`Engine`).
///
/// `@unchecked Sendable` without a queue to assert: every stored property but `signalSources` is a constant set in
/// `init`, and `signalSources` is written only by `run()`, on the main thread, before `dispatchMain()`. `reload()`
/// runs on the main queue (SIGHUP) or a control client's queue, and reads constants and calls the thread-safe
/// `Watcher` only.
final class RunService: @unchecked Sendable {
    private let settings: WardenSettings
    private let configFile: String?
    private let notifier = SystemdNotifier()
    private let stdout: JSONLinesSink?
    private let journal: JournalSink?
    private let server: ControlServer?
    private let metrics: MetricsFileSink?
    private let systemdStatus: SystemdStatusSink
    private let watcher: Watcher
    private var signalSources: [DispatchSourceSignal] = []

    /// `settings.controlSocket` is the socket served, wherever its path came from (`DaemonOptions.settings(from:)`):
    /// no registered root may hold it (`RootGuard`).
    init(
        settings: WardenSettings, configFile: String?, mode: WatcherMode, logger: Logger, bufferLimit: Int,
        exitOnEpipe: Bool
    ) {
        self.settings = settings
        self.configFile = configFile
        journal = Self.journalSink(settings.eventsTo)
        stdout =
            settings.eventsTo.toStdout || journal == nil
            ? JSONLinesSink(bufferLimit: bufferLimit) {
                if exitOnEpipe { Glibc.exit(0) }
                StandardStreams.error(
                    "cachewarden: stdout is closed (EPIPE); events are discarded from now on, quotas are still enforced\n"
                )
            } : nil
        server = settings.controlSocket.map { ControlServer(path: $0, mode: settings.controlSocketMode) }
        metrics = settings.metricsFile.map {
            MetricsFileSink(path: $0, interval: Double(settings.metricsInterval), logger: logger)
        }
        systemdStatus = SystemdStatusSink(notifier: notifier)
        let sinks: [(any EventSink)?] = [stdout, journal, server, metrics, systemdStatus]
        watcher = Watcher(settings: settings, mode: mode, sinks: sinks.compactMap { $0 }, logger: logger)
    }

    /// Starts everything and serves until a signal ends the process.
    func run() throws -> Never {
        signal(SIGPIPE, SIG_IGN)
        installSignalHandlers()
        makeDispatchDescriptors()
        // The socket exists before the first scan: a second daemon on the same socket fails at once, and clients
        // that connect during the scan are answered as soon as the totals are ready.
        try server?.listen()
        do throws(WardenError) {
            try watcher.start()
            try metrics?.start(watcher: watcher)
        } catch {
            server?.stop()
            throw error
        }
        server?.serve(watcher: watcher) { [unowned self] in self.reload() }
        stdout?.flush(timeout: 1) // the `ready` lines are out before systemd hears READY=1
        journal?.flush(timeout: 1)
        notifier.ready(status: systemdStatus.summary)
        StartupPages.release()
        if let interval = notifier.watchdogInterval {
            // From a timer of their own while the watcher's queue answers: when it is stuck, the pings stop and
            // systemd restarts us.
            watcher.startHeartbeat(every: interval) { [notifier] in notifier.watchdog() }
        }
        withExtendedLifetime(signalSources) { dispatchMain() }
    }

    /// libdispatch makes two descriptors the first time they are needed and cannot do without them: the main
    /// queue's eventfd (the first block queued on it, or `dispatchMain()`; when that fails it kills the process,
    /// SIGILL, "eventfd() failure: process is out of file descriptors") and the timerfd of the uptime clock (the
    /// first timer armed; when that fails, the timer never fires: the control socket's pause after `EMFILE` never
    /// ended). Clients that connect during the scan are accepted before `dispatchMain()` and can take the last
    /// descriptors first. The block makes the eventfd before `async` returns; the timer (1 s, doing nothing) is
    /// installed by libdispatch's manager thread before the sources made later, the listener's among them, so its
    /// timerfd is there before the first `accept`. Both on the main queue: nothing here runs on `.global()`
    /// (`ControlConnection.requests` says why).
    private func makeDispatchDescriptors() {
        DispatchQueue.main.async {}
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) {}
    }

    /// The journal's sink when `events_to` asks for it. Without a socket to send to (no journald: a container, a
    /// foreground run on a system without systemd), or with one nothing receives at (a journald that stopped), it
    /// says so on stderr and returns nil: events then go to stdout,
    /// even with `events_to = journal`, rather than nowhere.
    private static func journalSink(_ destination: EventsDestination) -> JournalSink? {
        guard destination.toJournal else { return nil }
        let path = JournalSink.socketPath()
        let fallback = destination.toStdout ? "" : "; events go to stdout instead"
        switch JournalSink.listener(at: path) {
        case .listening: break
        case .notASocket:
            StandardStreams.error(
                "cachewarden: warning: events_to = \(destination.rawValue) but \(path) is not a socket (no journald)\(fallback)\n"
            )
            return nil
        case .refused(let error):
            StandardStreams.error(
                "cachewarden: warning: events_to = \(destination.rawValue) but nothing receives at \(path) (\(error): a journald that stopped left its socket)\(fallback)\n"
            )
            return nil
        }
        do {
            return try JournalSink(socket: path) { StandardStreams.error("cachewarden: warning: \($0)\n") }
        } catch {
            StandardStreams.error("cachewarden: warning: cannot open a socket for the journal: \(error)\(fallback)\n")
            return nil
        }
    }

    /// Re-reads the config file and applies it (SIGHUP, `cachewarden reload`); returns nil or what went wrong,
    /// which is also an `error` event of kind `reload`. `control_socket` and `metrics_file` take effect at the
    /// next start.
    func reload() -> String? {
        guard let configFile else { return failed("no config file to re-read (started with --dir)") }
        notifier.reloading()
        defer { notifier.ready(status: systemdStatus.summary) }
        do {
            var new = try WardenSettings.load(configFile: configFile, checkingLockFiles: true)
            // The files in use stay the running ones until a restart (and no new root may hold them).
            new.controlSocket = settings.controlSocket
            new.metricsFile = settings.metricsFile
            new.eventsTo = settings.eventsTo
            try watcher.reload(new)
            return nil
        } catch {
            return failed("reload failed, keeping the running settings: \(error)")
        }
    }

    private func failed(_ problem: String) -> String {
        watcher.reportIssue(WardenIssue(message: problem, kind: "reload"))
        return problem
    }

    /// Handlers go in before `start()`: a signal that arrives while the trees are read (or right after the
    /// `ready` lines) must not meet the default action, which for SIGHUP/SIGUSR1 is to terminate. Their blocks
    /// run on the main queue, that is once `dispatchMain()` runs.
    private func installSignalHandlers() {
        let shutdown: @Sendable () -> Void = { [unowned self] in
            notifier.stopping()
            watcher.stop() // finishes every sink: stdout written, socket removed, last metrics written
            Glibc.exit(0)
        }
        on(SIGINT, shutdown)
        on(SIGTERM, shutdown)
        on(SIGUSR1) { [unowned self] in watcher.requestStatus() }
        on(SIGHUP) { [unowned self] in _ = reload() }
    }

    private func on(_ signo: Int32, _ body: @escaping @Sendable () -> Void) {
        signal(signo, SIG_IGN)
        let s = DispatchSource.makeSignalSource(signal: signo, queue: .main)
        s.setEventHandler(handler: body)
        s.resume()
        signalSources.append(s)
    }
}
