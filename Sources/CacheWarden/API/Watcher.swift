import CacheWardenLedger
import Dispatch
import Logging
import SystemPackage

/// Watches registered cache directories, keeps their size totals in memory, and trims them oldest-first to half
/// their quota the moment they cross it.
///
/// ```swift
/// let watcher = Watcher(settings: settings) { event in print(event.jsonLine(), terminator: "") }
/// try watcher.start()
/// …
/// watcher.stop()
/// ```
///
/// All state lives on one private serial queue; every method may be called from any thread, except from inside
/// a veto hook or a `clear` progress closure (which run on that queue). Events reach the handler on
/// `callbackQueue` in order, every stream from `events()`, and every sink given at creation.
public final class Watcher: Sendable {
    let engine: Engine
    private let streams = StreamSink()

    /// A watcher for `settings`. Nothing is read or watched until `start()`.
    /// - Parameters:
    ///   - settings: the directories, groups and global settings (what a config file holds).
    ///   - mode: `.enforce` (default) deletes; `.dryRun` reports the evictions policies would do and deletes
    ///     nothing; `.observe` keeps totals only (no policies, no timers, nothing that can delete).
    ///   - callbackQueue: where `handler` runs (default: a private serial queue).
    ///   - sinks: more receivers of every event (e.g. a `JSONLinesSink` for stdout).
    ///   - logger: diagnostics (never events); `.debug` logs every kernel record.
    ///   - handler: called for every event, in order, on `callbackQueue`.
    public convenience init(
        settings: WardenSettings, mode: WatcherMode = .enforce, callbackQueue: DispatchQueue? = nil,
        sinks: [any EventSink] = [], logger: Logger = Logger(label: "cachewarden"),
        handler: (@Sendable (WardenEvent) -> Void)? = nil
    ) {
        self.init(
            settings: settings, mode: mode, callbackQueue: callbackQueue, sinks: sinks, logger: logger,
            backend: .standard(), handler: handler)
    }

    /// A watcher whose engine makes its backend with `backend` (tests inject a scripted one, or a seam); `clock`
    /// and `disk` are seams for tests too (a manual clock, a scripted filesystem).
    init(
        settings: WardenSettings, mode: WatcherMode, callbackQueue: DispatchQueue?, sinks: [any EventSink] = [],
        logger: Logger, backend: BackendFactory, clock: any WardenClock = SystemClock(),
        disk: any DiskProbe = SystemDiskProbe(),
        handler: (@Sendable (WardenEvent) -> Void)?
    ) {
        var all = sinks
        if let handler { all.insert(CallbackSink(queue: callbackQueue, handler), at: 0) }
        all.append(streams)
        engine = Engine(
            settings: settings, mode: mode, sinks: all, logger: logger, backend: backend, clock: clock, disk: disk)
    }

    deinit { stop() }

    /// The mode the watcher was built with.
    public var mode: WatcherMode { engine.mode }

    /// Scans every registered directory once, watches them, emits `ready` per directory, applies the policies
    /// (expiry, then quota) and starts following changes.
    /// - Throws: `WardenError` saying what to fix (missing path, not a directory, permission, watch limit, …).
    public func start() throws(WardenError) {
        try sync { () throws(WardenError) in try engine.start() }
    }

    /// Stops watching, emits a `stop` line per directory, finishes the event streams and waits until every event
    /// has been handed to the handler and the sinks. Idempotent.
    public func stop() {
        guard engine.queue.sync(execute: { engine.stop() }) else { return }
        for sink in engine.sinks { sink.finish() }
    }

    /// Clears the named directories of `settings` (all when `names` is empty) once, without watching anything and
    /// without running any policy: only the named directories are read. `mode` is `.enforce` or `.dryRun`; the
    /// events (phases, evictions) go to `sinks`.
    @discardableResult
    public static func clear(
        _ settings: WardenSettings, names: [String] = [], mode: WatcherMode = .enforce,
        sinks: [any EventSink] = [], logger: Logger = Logger(label: "cachewarden"),
        progress: (@Sendable (ClearProgress) -> Void)? = nil
    ) throws(WardenError) -> ClearReport {
        guard mode != .observe else { throw .readOnly }
        let engine = Engine(settings: settings, mode: mode, sinks: sinks, logger: logger)
        let result: Result<ClearReport, WardenError> = engine.queue.sync {
            do throws(WardenError) { return .success(try engine.clearOnce(names, progress: progress)) } catch {
                return .failure(error)
            }
        }
        for sink in sinks { sink.finish() }
        return try result.get()
    }

    /// A one-shot size report of every directory in `settings`, in observe mode: each tree is read once (with a
    /// walker per core), nothing is watched, and nothing can be deleted — whatever the directories' state.
    public static func report(_ settings: WardenSettings, logger: Logger = Logger(label: "cachewarden"))
        throws(WardenError) -> [DirectoryStatus]
    {
        let engine = Engine(settings: settings, mode: .observe, sinks: [], logger: logger)
        let result: Result<[DirectoryStatus], WardenError> = engine.queue.sync {
            do throws(WardenError) { return .success(try engine.report()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// A new stream of every event from now on; it ends when the watcher stops. `buffering` says how many events
    /// may wait for a consumer that falls behind; a bounded stream never drops silently (see `EventBuffering`).
    public func events(buffering: EventBuffering) -> AsyncStream<WardenEvent> {
        streams.makeStream(buffering: buffering)
    }

    /// A snapshot of every directory's running totals (from memory, no rescan).
    public func totals() -> [DirectoryTotals] { engine.queue.sync { engine.allTotals() } }

    /// A size report per directory, from the ledger (no rescan) plus one `statvfs` each.
    public func status() -> [DirectoryStatus] {
        engine.queue.sync { engine.state.roots.order.compactMap { engine.statusReport($0) } }
    }

    /// Emits an `error` event about something outside the watcher (a failed reload, say), through every sink and
    /// in order with the watcher's own events.
    public func reportIssue(_ issue: WardenIssue) {
        engine.queue.sync {
            engine.state.events.emit(.error(issue))
            engine.deliver()
        }
    }

    /// Emits a `status` event per directory (what SIGUSR1 does in the CLI).
    public func requestStatus() { engine.queue.sync { engine.emitStatus() } }

    /// Trims directory `name` oldest-first until its total is at most `bytes` (nil: the directory's own `trim_to`
    /// target, which needs a quota).
    /// - Returns: the trim's report (also emitted as a `trim` event).
    /// - Throws: `readOnly` in observe mode, `unknownDirectory`, `notRunning`, `invalidSettings` without a target.
    @discardableResult
    public func trim(_ name: String, to bytes: Int64?) throws(WardenError) -> TrimReport {
        try sync { () throws(WardenError) in try engine.trim(name, to: bytes) }
    }

    /// Calls `beat` every `seconds` from a timer of its own (no leeway, its own queue: the watcher's work cannot
    /// delay it) for as long as the watcher's queue answers, until the watcher stops: a beat is skipped while a
    /// probe sent through the queue has waited more than `seconds`. A systemd watchdog fed from here stops being
    /// fed when the queue is stuck, and only then.
    public func startHeartbeat(every seconds: Double, _ beat: @escaping @Sendable () -> Void) {
        engine.queue.sync { engine.startHeartbeat(every: seconds, beat) }
    }

    /// The shared budgets of the running settings.
    public var groups: [GroupSettings] { engine.queue.sync { engine.state.settings.groups } }

    /// Clears the named directories (all when `names` is empty) with progress phases `pre_calculating`,
    /// `cleaning`, `post_calculating`, `done`. `progress` runs on the watcher's queue: keep it short.
    /// - Returns: what was removed (also emitted as `clear` events, `done` last).
    @discardableResult
    public func clear(
        _ names: [String] = [], dryRun: Bool = false, progress: (@Sendable (ClearProgress) -> Void)? = nil
    ) throws(WardenError) -> ClearReport {
        try sync { () throws(WardenError) in try engine.clear(names, dryRun: dryRun, progress: progress) }
    }

    /// Registers another directory while running: scanned, watched, `ready` emitted, policies applied.
    public func register(_ directory: DirectorySettings) throws(WardenError) {
        try sync { () throws(WardenError) in try engine.register(directory) }
    }

    /// Stops watching directory `name` (its `stop` line is emitted); nothing is deleted.
    public func unregister(name: String) throws(WardenError) {
        try sync { () throws(WardenError) in try engine.unregister(name) }
    }

    /// Applies new settings while running (what SIGHUP does in the CLI): added directories start, removed ones
    /// stop, changed ones take their new settings at once (a lowered quota trims immediately). Invalid settings
    /// leave the running ones untouched and throw.
    public func reload(_ newSettings: WardenSettings) throws(WardenError) {
        do throws(ConfigError) { try newSettings.validate() } catch { throw .invalidSettings(error) }
        try sync { () throws(WardenError) in
            guard engine.running else { throw .notRunning }
            engine.reload(newSettings)
            engine.deliver()
        }
    }

    /// Runs `body` on the engine's queue and rethrows its typed error.
    private func sync<T>(_ body: () throws(WardenError) -> T) throws(WardenError) -> T {
        let result: Result<T, WardenError> = engine.queue.sync {
            do throws(WardenError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    // MARK: For the benchmark and tests

    /// The ledger's storage, part by part, in bytes (what `cachewarden-bench` prints beside RSS per file).
    package func ledgerMemory() -> [(part: String, bytes: Int)] {
        engine.queue.sync { engine.state.ledger.memoryUse() }
    }

    /// Every counted file of directory `name` with its counted state (relative path → bytes and age key), for
    /// tests that compare the ledger with the disk file by file.
    func ledgerFiles(_ name: String) -> [String: (bytes: Int64, age: Int64)] {
        engine.queue.sync {
            guard let id = engine.state.roots.id(named: name), let top = engine.state.ledger.account(id)?.rootNode
            else { return [:] }
            var out: [String: (bytes: Int64, age: Int64)] = [:]
            engine.state.ledger.forEachRecord(under: top) { r in
                let inode = engine.state.ledger.inode(ofRecord: r)
                out[PathBytes.display(engine.state.ledger.relativePath(ofRecord: r))] = (
                    inode?.bytes ?? -1, inode?.age ?? -1
                )
            }
            return out
        }
    }

    /// The files of directory `name` the watcher knows to be open (for tests of open tracking).
    func openFiles(_ name: String) -> [String] {
        engine.queue.sync {
            guard let id = engine.state.roots.id(named: name), let top = engine.state.ledger.account(id)?.rootNode
            else { return [] }
            var out: [String] = []
            engine.state.ledger.forEachRecord(under: top) { r in
                if engine.state.ledger.isOpen(r) {
                    out.append(PathBytes.display(engine.state.ledger.relativePath(ofRecord: r)))
                }
            }
            return out
        }
    }

    /// The watches the backend holds (for tests of watch bookkeeping).
    var watchCount: Int { engine.queue.sync { engine.backend?.watchCount ?? 0 } }

}
