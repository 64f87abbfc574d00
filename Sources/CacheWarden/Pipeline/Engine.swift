import CWardenShims
import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch
import Logging
import SystemPackage

/// What a watcher may do to the disk. Chosen once, when the watcher is built: it decides which stages exist.
public enum WatcherMode: Sendable, Equatable {
    /// Policies run and evict (`cachewarden run`, the library default).
    case enforce
    /// Policies decide as in `enforce`, and every deletion is replaced by its report (`"dry_run": true`).
    case dryRun
    /// Totals only: no policies, no timers, no evictor — nothing that could delete exists.
    case observe
}

/// The pipeline of one watcher, wired in one place (`process`): backend → ledger updater → ledger → policies →
/// evictor → sinks. It owns the state the stages pass along and is confined to one serial queue (`queue`): every
/// method runs there. That confinement is what makes the `@unchecked Sendable` true.
/// Queue: `queue` ("cachewarden.engine"); its entry points check it with `assertOnQueue` (debug builds).
final class Engine: @unchecked Sendable {
    let queue = DispatchQueue(label: "cachewarden.engine")
    let mode: WatcherMode
    let logger: Logger
    let sinks: [any EventSink]
    /// Makes the backend each time the engine starts (inotify unless a test or the settings say otherwise).
    let backendFactory: BackendFactory

    var state: PipelineState
    var backend: (any ChangeBackend)?
    var updater: LedgerUpdater
    /// What updater calls outside a batch (the re-stat after a trim, an audit) changed: taken into the next step.
    var carried = LedgerDelta()
    var policies: PolicySet
    /// The stage that deletes; `nil` in observe mode.
    let evictor: Evictor?
    var timers: [ClockTimer] = []
    var rearmTimer: ClockTimer?
    /// Empties the trashes of roots whose units were moved out a moment ago (`Engine.emptyTrashes`).
    var trashTimer: ClockTimer?
    var audits = AuditSchedule()
    /// One-shot timers policies asked for (a deferred trim, a paced pass), by policy index.
    var wakeUps: [Int: (at: UInt64, timer: ClockTimer)] = [:]
    var heartbeats: [Heartbeat] = []
    private(set) var running = false

    init(
        settings: WardenSettings, mode: WatcherMode, sinks: [any EventSink], logger: Logger,
        backend: BackendFactory = .standard(),
        clock: any WardenClock = SystemClock(), disk: any DiskProbe = SystemDiskProbe()
    ) {
        self.mode = mode
        self.sinks = sinks
        self.logger = logger
        self.backendFactory = backend
        state = PipelineState(settings: settings.resolved(), clock: clock, disk: disk)
        updater = LedgerUpdater(scanner: TreeScanner(watching: nil))
        policies = PolicySet(mode == .observe ? WardenSettings() : settings)
        switch mode {
        case .enforce:
            evictor = Evictor(
                makeDeleter: {
                    SafeRemover(root: $0.id, in: $1, fileStat: $0.fileStat, renameRefused: $0.renameRefused)
                },
                dryRun: false)
        case .dryRun: evictor = Evictor(makeDeleter: { _, _ in DryRunDeleter() }, dryRun: true)
        case .observe: evictor = nil
        }
    }

    // MARK: The pipeline

    /// One batch from the backend, through every stage to the sinks.
    func process(_ batch: inout ChangeBatch) -> BackendPace {
        assertOnQueue(queue)
        guard running else { return .keepReading }
        step(updater.apply(batch, &state))
        deliver()
        return readingPace()
    }

    /// The stages after the ledger updater, for what it changed: activity for idle deferral, overflow recovery,
    /// audits, lost roots; then the policies for the roots whose totals moved.
    func step(_ delta: LedgerDelta) {
        var delta = delta
        delta.merge(carried)
        carried = LedgerDelta()
        let now = state.clock.uptimeNanoseconds
        for id in delta.active { state.lastActivity[id] = now }
        if delta.overflowed { delta.touched.formUnion(recoverFromOverflow()) }
        if !delta.suspects.isEmpty { delta.touched.formUnion(audit(delta.suspects)) }
        for (root, why) in delta.lostRoots { rootLost(root, why: why) }
        settle()
        if !delta.touched.isEmpty { enforce(.changes, roots: delta.touched.sorted()) }
    }

    /// Asks the policies what to evict and hands their goals to the evictor (none exists in observe mode).
    func enforce(_ trigger: PolicyTrigger, roots: [RootID], onlyPolicy: Int? = nil) {
        assertOnQueue(queue)
        var wakeUps: [Int: UInt64] = [:]
        let decision = policies.decide(trigger, roots: roots, state: state, only: onlyPolicy, wakeUps: &wakeUps)
        for (policy, at) in wakeUps { scheduleWakeUp(policy, at: at) }
        state.forgetClientLockWaits(trigger, roots: roots, only: onlyPolicy, goals: decision.goals)
        for e in decision.events { state.events.emit(e) }
        guard let evictor, !decision.goals.isEmpty else { return }
        // Each unlink queues our own deletion record; hold the backend while deleting, so they are read in one
        // batch afterwards instead of waking the reader one by one.
        backend?.suspend()
        defer { backend?.resume() }
        for goal in decision.goals {
            let outcome = evict(goal, with: evictor)
            let reports = outcome.reports
            // Roots whose client holds its lock (or lost it during the trim) wait, retried later.
            let lockWait = state.settleClientLocks(goal.reason, policy: goal.policy).wakeUp
            carried.merge(updater.restat(outcome.changed, &state)) // files a trim found changed on disk
            if lockWait == nil || !reports.isEmpty { policies.outcome(goal, reports) }
            if let lockWait {
                policies.deferred(goal)
                scheduleWakeUp(goal.policy, at: lockWait)
            }
            // A pass that stopped at its `delete_rate` budget is followed by the next, a second later; a held trim
            // is tried again once its hold window has passed (if no change about the file came first).
            let now = state.clock.uptimeNanoseconds
            if reports.contains(where: \.paced) { scheduleWakeUp(goal.policy, at: Nanoseconds.after(now, seconds: 1)) }
            if reports.contains(where: \.held) {
                scheduleWakeUp(goal.policy, at: Nanoseconds.after(now, UInt64(TrimRun.holdWindow)))
            }
        }
        settle()
    }

    /// Re-stats every file of the roots where a name may have changed a counted file unseen
    /// (`LedgerDelta.suspects`), as often as `AuditSchedule` allows; the rest waits on a one-shot timer. Returns
    /// the roots whose totals the audit changed.
    func audit(_ suspects: Set<RootID>) -> Set<RootID> {
        assertOnQueue(queue)
        audits.request(suspects)
        let (roots, next) = audits.due(now: state.clock.uptimeNanoseconds)
        var found = updater.audit(roots, &state)
        let touched = found.touched
        found.touched = []
        carried.merge(found)
        if let next, audits.timer == nil {
            audits.timer = state.clock.schedule(at: next, on: queue) { @Sendable [unowned self] in
                self.audits.timer = nil
                guard self.running else { return }
                var delta = LedgerDelta()
                delta.touched = self.audit([])
                self.step(delta)
                self.deliver()
            }
        }
        return touched
    }

    /// Ends a step: nodes the ledger removed lose their watches, and the updater forgets every ID it held of a
    /// removed node or record before their slots can be reused.
    func settle() {
        assertOnQueue(queue)
        let (nodes, records) = state.ledger.settle()
        for n in nodes { backend?.unwatch(n) }
        updater.forget(nodes: Set(nodes), records: Set(records))
        if !state.trashToEmpty.isEmpty { scheduleTrashEmptying() }
    }

    /// Hands the step's events to every sink.
    func deliver() {
        assertOnQueue(queue)
        guard !state.events.isEmpty else { return }
        let events = state.events.take()
        for sink in sinks { sink.receive(events) }
    }

    // MARK: Lifecycle

    func start() throws(WardenError) {
        assertOnQueue(queue)
        guard !running else { throw .alreadyRunning }
        do throws(ConfigError) { try state.settings.validate(checkingPaths: false) } catch {
            throw .invalidSettings(error)
        }
        let backend = try backendFactory.make(queue, logger, state.clock)
        self.backend = backend
        updater = LedgerUpdater(scanner: TreeScanner(watching: WatchPort(backend)))
        do throws(WardenError) {
            let guardian = state.settings.rootGuard
            for dir in state.settings.directories { try addRoot(dir, guardian: guardian) }
            try backend.start { [unowned self] batch in self.process(&batch) }
        } catch {
            teardown()
            throw error
        }
        // The initial scan grew the ledger's arrays by doubling; the buffers they left are free but still
        // resident in the allocator's heap. Hand them back to the kernel once.
        _ = cwsys_release_free_memory()
        running = true
        for rt in state.roots.all { emitReady(rt.id) }
        enforce(.startup, roots: state.roots.order)
        startTimers()
        deliver()
    }

    /// Stops; returns false when it was not running. The caller finishes the sinks (off this queue: a callback
    /// may be waiting for it).
    func stop() -> Bool {
        assertOnQueue(queue)
        guard running else { return false }
        running = false
        for rt in state.roots.all { if let t = state.totals(rt.id) { state.events.emit(.stop(t)) } }
        teardown()
        deliver()
        return true
    }

    /// A one-shot clear: only the named roots are read (nothing is watched, no policy runs) and cleared through
    /// the evictor of this engine's mode (a dry run only reports).
    func clearOnce(_ names: [String], progress: (@Sendable (ClearProgress) -> Void)?) throws(WardenError) -> ClearReport
    {
        assertOnQueue(queue)
        precondition(
            mode != .observe && !running, "a one-shot clear runs in enforce or dry-run mode, not while watching")
        guard let evictor else { throw .readOnly }
        do throws(ConfigError) { try state.settings.validate(checkingPaths: false) } catch {
            throw .invalidSettings(error)
        }
        defer { teardown(); deliver() }
        let dirs = state.settings.directories.filter { names.isEmpty || names.contains($0.name) }
        for name in names where !dirs.contains(where: { $0.name == name }) { throw .unknownDirectory(name) }
        let guardian = state.settings.rootGuard
        for dir in dirs { try addRoot(dir, guardian: guardian) }
        try takeRequestClientLocks(state.roots.order, .clear, announce: false) // the command waits, and says so
        let report = clearRoots(
            state.roots.order.filter { state.roots[$0].map { $0.lost == nil } ?? false }, with: evictor,
            progress: progress
        ).report
        if let lost = state.settleClientLocks(.clear, policy: nil).lost { throw .clientLockBusy(lost) }
        settle()
        return report
    }

    /// A one-shot report in observe mode: every root is read (nothing is watched, nothing can be deleted) and
    /// reported, then dropped.
    func report() throws(WardenError) -> [DirectoryStatus] {
        assertOnQueue(queue)
        precondition(mode == .observe && !running, "a one-shot report runs in observe mode, not while watching")
        do throws(ConfigError) { try state.settings.validate(checkingPaths: false) } catch {
            throw .invalidSettings(error)
        }
        defer { teardown() }
        var reports: [DirectoryStatus] = []
        let guardian = state.settings.rootGuard
        for dir in state.settings.directories {
            try addRoot(dir, guardian: guardian) // a directory the watcher would create is reported empty, not created
            if let id = state.roots.id(named: dir.name), let r = statusReport(id) { reports.append(r) }
        }
        return reports
    }

    private func teardown() {
        trashTimer?.cancel()
        trashTimer = nil
        emptyTrashes()
        backend?.stop()
        backend = nil
        updater = LedgerUpdater(scanner: TreeScanner(watching: nil))
        carried = LedgerDelta()
        for t in timers { t.cancel() }
        timers.removeAll()
        rearmTimer?.cancel()
        rearmTimer = nil
        audits.cancel()
        for w in wakeUps.values { w.timer.cancel() }
        wakeUps.removeAll()
        for h in heartbeats { h.cancel() }
        heartbeats.removeAll()
        state.ledger = SizeLedger()
        state.roots.removeAll()
        state.clientLocks.releaseAll()
        state.clientLocks = ClientLockTable()
    }

    func emitReady(_ id: RootID) {
        if let t = state.totals(id) { state.events.emit(.ready(t)) }
    }

    /// Consults policy `index` again at `at` (uptime nanoseconds); an earlier request replaces a later one.
    func scheduleWakeUp(_ index: Int, at: UInt64) {
        if let existing = wakeUps[index] {
            guard at < existing.at else { return }
            existing.timer.cancel()
        }
        let timer = state.clock.schedule(at: at, on: queue) { @Sendable [unowned self] in
            self.wakeUps[index] = nil
            guard self.running else { return }
            self.enforce(.timer, roots: self.state.roots.order, onlyPolicy: index)
            self.deliver()
        }
        wakeUps[index] = (at, timer)
    }

    /// The watchdog's heartbeat: a repeating call while this queue answers (`Heartbeat`); cancelled when the engine
    /// stops.
    func startHeartbeat(every seconds: Double, _ beat: @escaping @Sendable () -> Void) {
        assertOnQueue(queue)
        heartbeats.append(Heartbeat(every: seconds, watching: queue, beat))
    }

    /// Starts a timer per policy that wants one (none in observe mode: it has no policies).
    func startTimers() {
        assertOnQueue(queue)
        for t in timers { t.cancel() }
        timers.removeAll()
        for (i, policy) in policies.policies.enumerated() {
            guard let seconds = policy.timerInterval else { continue }
            let interval = Nanoseconds.span(seconds: seconds)
            timers.append(
                state.clock.schedule(
                    at: Nanoseconds.after(state.clock.uptimeNanoseconds, interval), repeating: interval, on: queue
                ) {
                    @Sendable [unowned self] in
                    guard self.running else { return }
                    self.enforce(.timer, roots: self.state.roots.order, onlyPolicy: i)
                    self.deliver()
                })
        }
    }
}
