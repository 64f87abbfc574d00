import CacheWardenLedger
import SystemPackage

/// Carries out eviction goals for every policy (quota, `max_files`, groups, age, low disk, manual trim, clear):
/// it picks victims oldest first and deletes them through the deleter the watcher's mode gave it.
///
/// Victims come from each root's heap one age group at a time (ties ordered by path), walked without taking them
/// out (`VictimCursor`); `TrimRun` says who is spared. The evictor writes no ledger: what each trim deleted comes
/// back in the outcome (`EvictionOutcome.removals`), and the engine applies it before it reads the next changes
/// (the backend is held meanwhile), so a deletion's `IN_DELETE` finds nothing to subtract twice. An `evict` event
/// means CacheWarden deleted that file (or, in a dry run, would have): a victim that vanished under it (renamed by
/// its client) is left to the changes that say where it went, and the trim goes on with the next candidate.
struct Evictor {
    /// The deleter for one root and one trim (`SafeRemover`, or `DryRunDeleter` in a dry run).
    let makeDeleter: (RootRuntime, SizeLedger) -> any FileDeleter
    let dryRun: Bool

    /// Progress of a running trim: files removed and bytes freed so far, and the outbox for events about it.
    typealias Progress = (_ removed: Int, _ freed: Int64, _ events: inout EventOutbox) -> Void

    /// Works toward `goal`; returns one report per root trimmed (each also emitted as a `trim` event) and the
    /// victims that were not what the ledger counted.
    @discardableResult
    func run(_ goal: EvictionGoal, _ ledger: SizeLedger, _ context: inout EvictionContext, progress: Progress? = nil)
        -> EvictionOutcome
    {
        switch goal.target {
        case .free(let bytes): return free(bytes, goal, ledger, &context, progress)
        case .groupTotal(let target): return trimGroup(to: target, goal, ledger, &context)
        default:
            var outcome = EvictionOutcome()
            for id in goal.roots {
                guard var run = makeRun(id, goal, ledger, &context, progress) else { continue }
                if case .depth(let depth) = run.runtime.settings.evictUnit {
                    run.evictOldestUnits(depth: depth, ledger, &context.events)
                    // A clear takes the units whole (each leaves its client's view in one step), then what is left:
                    // files of units that keep something (a protected file) and files outside any unit.
                    if goal.target == .everything { run.evictOldestFirst(ledger, &context.events) }
                } else {
                    run.evictOldestFirst(ledger, &context.events)
                }
                outcome.add(&run, &context.events)
            }
            return outcome
        }
    }

    /// The run of `goal` on `root`, its client's locks taken first (nil: its client holds one, or it is gone; the
    /// engine put the goal's roots in oldest-first order before). A `reportOnly` run only says why a member gave
    /// nothing (`MemberTurns.finish`): it takes no lock and has a deleter that cannot delete.
    func makeRun(
        _ root: RootID, _ goal: EvictionGoal, _ ledger: SizeLedger, _ context: inout EvictionContext,
        _ progress: Progress?, reportOnly: Bool = false
    ) -> TrimRun? {
        guard let rt = context.roots[root], rt.lost == nil, ledger.account(root) != nil else { return nil }
        let (now, lockWait) = (context.clock.uptimeNanoseconds, context.clientLockWait)
        // the client holds its lock: wait
        guard dryRun || reportOnly || context.clientLocks.admit(root, rt, goal, now: now, lockWait: lockWait) else {
            return nil
        }
        let deleter: any FileDeleter
        if reportOnly {
            deleter = ReportOnlyDeleter()
        } else {
            deleter = context.clientLocks.guardedDeleter(makeDeleter(rt, ledger), root, rt)
        }
        let run = TrimRun(
            root: root, runtime: rt, goal: goal, ledger, clock: context.clock, dryRun: dryRun, deleter: deleter,
            progress: progress)
        context.events.reserve(run.expectedVictims)
        return run
    }

    /// Frees `bytes` across the goal's roots in order, each trimmed toward its total minus what is still needed,
    /// each by its own rules (`MemberTurns`): files in use only once no root has anything else. A root waiting for
    /// `trim_after_idle` gives last, and only what brings free space back to the low watermark: below it the disk
    /// is about to fill, which fails every writer, the busy client included; above it the purge is for comfort,
    /// and a deletion under a running build would fail that build.
    private func free(
        _ bytes: Int64, _ goal: EvictionGoal, _ ledger: SizeLedger, _ context: inout EvictionContext,
        _ progress: Progress?
    ) -> EvictionOutcome {
        let urgent = goal.watermarks.map { max(0, bytes - ($0.high - $0.low)) } ?? bytes
        /// A root's run, trimming it toward its total minus what is still wanted.
        func run(_ id: RootID, wanting remaining: Int64, _ context: inout EvictionContext, reportOnly: Bool = false)
            -> TrimRun?
        {
            let total = ledger.total(id)
            guard total > 0 else { return nil }
            var perRoot = goal
            perRoot.target = .total(max(0, total - remaining))
            perRoot.limit = goal.limit ?? context.roots[id]?.settings.deleteRate
            return makeRun(id, perRoot, ledger, &context, progress, reportOnly: reportOnly)
        }
        var members = MemberTurns(goal)
        for (inUse, waiters) in [(false, false), (true, false), (false, true), (true, true)] {
            members.nextRound(inUse: inUse, overriding: waiters ? [.trimAfterIdle] : [])
            let wanted = waiters ? urgent : bytes
            var i = goal.roots.startIndex
            while members.freed < wanted && i < goal.roots.endIndex {
                let id = goal.roots[i], remaining = wanted - members.freed
                if !members.take(from: id, ledger, &context, making: { run(id, wanting: remaining, &$0) }) { i += 1 }
            }
        }
        let missing = max(0, bytes - members.freed) // what a skipped root's line says it was asked for
        return members.finish(&context) { run($0, wanting: missing, &$1, reportOnly: true) }
    }

    /// A group over its shared quota: one victim at a time (a file, or a whole unit) from the member furthest above
    /// its fair share (or least under it, once all are under), until the members' sum is at the target or nothing
    /// is left; a member that cannot give now is skipped and the others give its share (`MemberTurns`).
    private func trimGroup(
        to target: Int64, _ goal: EvictionGoal, _ ledger: SizeLedger, _ context: inout EvictionContext
    ) -> EvictionOutcome {
        var members = MemberTurns(goal)
        for inUse in [false, true] {
            members.nextRound(inUse: inUse)
            while true {
                var usage: [RootID: Int64] = [:]
                for id in goal.roots { usage[id] = members.usage(id, ledger) }
                guard usage.values.reduce(0, +) > target else { break }
                func over(_ id: RootID) -> Int64 { (usage[id] ?? 0) - (goal.shares[id] ?? 0) }
                guard let member = goal.roots.filter({ members.isOpen($0) }).max(by: { over($0) < over($1) }) else {
                    break
                }
                _ = members.take(from: member, ledger, &context) { makeRun(member, goal, ledger, &$0, nil) }
            }
        }
        return members.finish(&context) { makeRun($0, goal, ledger, &$1, nil, reportOnly: true) }
    }
}

/// What the evictor hands on after a goal, for the engine to apply (`Engine.evict`): the `trim` reports; what each
/// trim deleted (none in a dry run); the roots where a unit's rename into the trash was refused (their later trims
/// go file by file at once) and those that left units in their trash (deleted a moment later); and the names the
/// ledger updater stats again: the victims the re-check found changed on disk (replaced or rewritten since they
/// were counted) — the other names of deleted files' inodes come from the ledger as the removals are applied.
struct EvictionOutcome {
    var reports: [TrimReport] = []
    var removals: [PendingRemovals] = []
    var renameRefused: [RootID: Errno] = [:]
    var leftInTrash = Set<RootID>()
    var changed: [RecordID] = []

    /// Finishes `run` and keeps what it reported and did.
    @discardableResult
    mutating func add(_ run: inout TrimRun, _ events: inout EventOutbox) -> TrimReport {
        let report = run.finish(&events)
        reports.append(report)
        changed += run.changed
        if !run.dryRun && !run.pending.isEmpty { removals.append(run.pending) }
        if let refused = run.renameRefused { renameRefused[run.root] = refused }
        if run.leftInTrash { leftInTrash.insert(run.root) }
        return report
    }

    /// Adds what the trims of another goal did (a clear's, root after root).
    mutating func add(_ other: EvictionOutcome) {
        reports += other.reports
        removals += other.removals
        renameRefused.merge(other.renameRefused) { first, _ in first }
        leftInTrash.formUnion(other.leftInTrash)
        changed += other.changed
    }
}
