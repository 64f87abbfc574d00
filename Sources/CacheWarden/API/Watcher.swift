import Dispatch
import Logging
import SystemPackage

/// Watches registered cache directories with inotify, keeps their size totals in memory, and trims them
/// oldest-first to half their quota the moment they cross it.
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
/// `callbackQueue` in order, and every stream from `events()`.
public final class Watcher: Sendable {
    private let engine: Engine
    private static let onCallbackQueue = DispatchSpecificKey<ObjectIdentifier>()

    /// A watcher for `settings`. Nothing is read or watched until `start()`.
    /// - Parameters:
    ///   - callbackQueue: where `handler` runs (default: a private serial queue).
    ///   - dryRun: report the evictions that policies would do and delete nothing.
    ///   - logger: diagnostics (never events); `.debug` logs every inotify record with its mask names.
    ///   - handler: called for every event, in order, on `callbackQueue`.
    public convenience init(settings: WardenSettings, callbackQueue: DispatchQueue? = nil, dryRun: Bool = false,
                logger: Logger = Logger(label: "cachewarden"),
                handler: (@Sendable (WardenEvent) -> Void)? = nil) {
        self.init(settings: settings, callbackQueue: callbackQueue, dryRun: dryRun, logger: logger,
                  addWatchOverride: nil, handler: handler)
    }

    init(settings: WardenSettings, callbackQueue: DispatchQueue?, dryRun: Bool, logger: Logger,
         addWatchOverride: (@Sendable (String) -> Errno?)?, handler: (@Sendable (WardenEvent) -> Void)?) {
        let queue = callbackQueue ?? DispatchQueue(label: "cachewarden.callbacks")
        engine = Engine(settings: settings, callbackQueue: queue, handler: handler, dryRun: dryRun, logger: logger,
                        addWatchOverride: addWatchOverride)
        queue.setSpecific(key: Self.onCallbackQueue, value: ObjectIdentifier(engine))
    }

    deinit { stop() }

    /// Scans every registered directory once, watches them, emits `ready` per directory, applies the policies
    /// (expiry, then quota) and starts following events.
    /// - Throws: `WardenError` saying what to fix (missing path, not a directory, permission, watch limit, …).
    public func start() throws(WardenError) {
        let result: Result<Void, WardenError> = engine.queue.sync {
            do throws(WardenError) { try engine.start(); return .success(()) } catch { return .failure(error) }
        }
        try result.get()
    }

    /// Stops watching, emits a `stop` line per directory, finishes the event streams and waits until every event
    /// has been handed to the handler. Idempotent.
    public func stop() {
        engine.queue.sync { engine.stop() }
        if DispatchQueue.getSpecific(key: Self.onCallbackQueue) != ObjectIdentifier(engine) {
            engine.callbackQueue.sync {}
        }
    }

    /// A new stream of every event from now on; it ends when the watcher stops.
    public func events() -> AsyncStream<WardenEvent> {
        engine.queue.sync { engine.addStream() }
    }

    /// A snapshot of every directory's running totals (from memory, no rescan).
    public func totals() -> [DirectoryTotals] {
        engine.queue.sync { engine.allTotals() }
    }

    func statusReports() -> [DirectoryStatus] {
        engine.queue.sync { engine.rootOrder.compactMap { engine.statusReport($0) } }
    }

    /// Every counted file of directory `name` with its counted bytes (relative path → bytes), for tests that
    /// compare the ledger with the disk file by file.
    func ledgerFiles(_ name: String) -> [String: Int64] {
        engine.queue.sync {
            guard let id = engine.rootID(named: name), engine.ledger.accounts[id] != nil else { return [:] }
            var out: [String: Int64] = [:]
            for r in engine.ledger.records(ofRoot: id) {
                out[Engine.display(engine.ledger.relativePath(ofRecord: r))] = engine.ledger.inode(ofRecord: r)?.bytes ?? -1
            }
            return out
        }
    }

    /// The inotify descriptor and the watch descriptors the ledger maps (for tests of watch bookkeeping).
    var watchBookkeeping: (fd: Int32?, mapped: Int) {
        engine.queue.sync { (engine.inotify?.fd, engine.wdToNode.count) }
    }

    /// Emits a `status` event per directory (what SIGUSR1 does in the CLI).
    public func requestStatus() {
        engine.queue.sync { engine.emitStatus() }
    }

    /// Trims directory `name` oldest-first until its total is at most `bytes`.
    /// - Returns: the trim's report (also emitted as a `trim` event).
    @discardableResult
    public func trim(_ name: String, to bytes: Int64) throws(WardenError) -> TrimReport {
        let result: Result<TrimReport, WardenError> = engine.queue.sync {
            guard engine.running else { return .failure(.notRunning) }
            guard let id = engine.rootID(named: name) else { return .failure(.unknownDirectory(name)) }
            let report = engine.trim(id, reason: .manual, goal: TrimGoal(target: max(0, bytes)))
            engine.statDirtyFiles()   // files the trim found changed on disk
            engine.deliver()
            guard let report else { return .failure(.pathMissing(engine.roots[id]?.path ?? name)) }
            return .success(report)
        }
        return try result.get()
    }

    /// Clears the named directories (all when `names` is empty) with progress phases `pre_calculating`,
    /// `cleaning`, `post_calculating`, `done`. `progress` runs on the watcher's queue: keep it short.
    /// - Returns: what was removed (also emitted as `clear` events, `done` last).
    @discardableResult
    public func clear(_ names: [String] = [], progress: (@Sendable (ClearProgress) -> Void)? = nil) throws(WardenError) -> ClearReport {
        let result: Result<ClearReport, WardenError> = engine.queue.sync {
            guard engine.running else { return .failure(.notRunning) }
            var ids: [Int32] = []
            for name in names {
                guard let id = engine.rootID(named: name) else { return .failure(.unknownDirectory(name)) }
                ids.append(id)
            }
            let report = engine.clear(names.isEmpty ? engine.rootOrder : ids, progress: progress)
            engine.statDirtyFiles()
            engine.deliver()
            return .success(report)
        }
        return try result.get()
    }

    /// Registers another directory while running: scanned, watched, `ready` emitted, policies applied.
    public func register(_ directory: DirectorySettings) throws(WardenError) {
        let result: Result<Void, WardenError> = engine.queue.sync {
            guard engine.running else { return .failure(.notRunning) }
            guard engine.rootID(named: directory.name) == nil else { return .failure(.duplicateDirectory(directory.name)) }
            var candidate = engine.settings
            candidate.directories.append(directory)
            do throws(ConfigError) { try candidate.validate(checkingPaths: false) } catch { return .failure(.invalidSettings(error)) }
            do throws(WardenError) { try engine.addRoot(directory) } catch { return .failure(error) }
            engine.settings = candidate
            let id = engine.rootOrder.last!
            engine.emitReady(id)
            engine.runStartupPolicies(id)
            engine.startTimers()
            engine.deliver()
            return .success(())
        }
        try result.get()
    }

    /// Stops watching directory `name` (its `stop` line is emitted); nothing is deleted.
    public func unregister(name: String) throws(WardenError) {
        let result: Result<Void, WardenError> = engine.queue.sync {
            guard engine.running else { return .failure(.notRunning) }
            guard let id = engine.rootID(named: name) else { return .failure(.unknownDirectory(name)) }
            if let t = engine.totals(id) { engine.emit(.stop(t)) }
            engine.removeRoot(id)
            engine.settings.directories.removeAll { $0.name == name }
            engine.startTimers()
            engine.deliver()
            return .success(())
        }
        try result.get()
    }

    /// Applies new settings while running (what SIGHUP does in the CLI): added directories start, removed ones
    /// stop, changed ones take their new settings at once (a lowered quota trims immediately). Invalid settings
    /// leave the running ones untouched and throw.
    public func reload(_ newSettings: WardenSettings) throws(WardenError) {
        let result: Result<Void, WardenError> = engine.queue.sync {
            guard engine.running else { return .failure(.notRunning) }
            do throws(ConfigError) { try newSettings.validate() } catch { return .failure(.invalidSettings(error)) }
            engine.reload(newSettings)
            engine.deliver()
            return .success(())
        }
        try result.get()
    }
}

extension Engine {
    /// Applies a validated new configuration (see `Watcher.reload`).
    func reload(_ new: WardenSettings) {
        let oldByName = Dictionary(uniqueKeysWithValues: settings.directories.map { ($0.name, $0) })
        let newNames = Set(new.directories.map(\.name))
        for id in rootOrder where !(newNames.contains(roots[id]!.settings.name)) {
            if let t = totals(id) { emit(.stop(t)) }
            removeRoot(id)
        }
        let basisChanged = new.sizeBasis != settings.sizeBasis
        settings = new
        for dir in new.directories {
            if let old = oldByName[dir.name], let id = rootID(named: dir.name) {
                let samePath = PathResolver.absolute(old.path, relativeTo: "/") == PathResolver.absolute(dir.path, relativeTo: "/")
                if samePath && old.order == dir.order && old.exclude == dir.exclude && old.oneFileSystem == dir.oneFileSystem && !basisChanged {
                    roots[id]!.settings = dir
                    roots[id]!.protect = GlobMatcher(dir.protect)
                    runStartupPolicies(id)
                    continue
                }
                if let t = totals(id) { emit(.stop(t)) }
                removeRoot(id)
            }
            do throws(WardenError) {
                try addRoot(dir)
                let id = rootOrder.last!
                emitReady(id)
                runStartupPolicies(id)
            } catch {
                emitError(error.description, dir: dir.name, kind: "reload")
            }
        }
        startTimers()
    }
}
