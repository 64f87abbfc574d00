import CacheWardenLedger

/// Carries out eviction goals for every policy (quota, `max_files`, groups, age, low disk, manual trim, clear):
/// it picks victims oldest first and deletes them through the deleter the watcher's mode gave it.
///
/// Victims come from each root's heap one age group at a time (ties ordered by path), so choosing k victims
/// costs O(k log n); `TrimRun` says who is spared. A deletion is taken out of the ledger at once, so its later
/// `IN_DELETE` finds nothing to subtract twice. An `evict` event means CacheWarden deleted that file (or, in a dry
/// run, would have): a victim that vanished under it (renamed by its client) is left to the changes that say where
/// it went, and the trim goes on with the next candidate.
struct Evictor {
    /// The deleter for one root and one trim (`SafeRemover`, or `DryRunDeleter` in a dry run).
    let makeDeleter: (RootRuntime, SizeLedger) -> any FileDeleter
    let dryRun: Bool

    /// Progress of a running trim: files removed and bytes freed so far, and the outbox for events about it.
    typealias Progress = (_ removed: Int, _ freed: Int64, _ events: inout EventOutbox) -> Void

    /// Works toward `goal`; returns one report per root trimmed (each also emitted as a `trim` event) and the
    /// victims that were not what the ledger counted.
    @discardableResult
    func run(_ goal: EvictionGoal, _ state: inout PipelineState, progress: Progress? = nil) -> EvictionOutcome {
        switch goal.target {
        case .free(let bytes): return free(bytes, goal, &state, progress)
        case .groupTotal(let target): return trimGroup(to: target, goal, &state)
        default:
            var outcome = EvictionOutcome()
            for id in goal.roots {
                guard var run = makeRun(id, goal, &state, progress) else { continue }
                if case .depth(let depth) = run.runtime.settings.evictUnit {
                    run.evictOldestUnits(depth: depth, &state)
                    // A clear takes the units whole (each leaves its client's view in one step), then what is left:
                    // files of units that keep something (a protected file) and files outside any unit.
                    if goal.target == .everything { run.evictOldestFirst(&state) }
                } else {
                    run.evictOldestFirst(&state)
                }
                outcome.add(&run, &state)
            }
            return outcome
        }
    }

    /// The run of `goal` on `root`, its client's locks taken first (nil: its client holds one, or it is gone). A
    /// `reportOnly` run only says why a member gave nothing (`MemberTurns.finish`): it takes no lock and has a
    /// deleter that cannot delete.
    func makeRun(
        _ root: RootID, _ goal: EvictionGoal, _ state: inout PipelineState, _ progress: Progress?,
        reportOnly: Bool = false
    ) -> TrimRun? {
        guard let rt = state.roots[root], rt.lost == nil, state.ledger.account(root) != nil else { return nil }
        // the client holds its lock: wait
        guard dryRun || reportOnly || state.admitClientLocks(root, rt, goal) else { return nil }
        if state.ledger.account(root)?.ordered != true { state.ledger.setOrdered(root, true) }
        let deleter: any FileDeleter
        if reportOnly {
            deleter = ReportOnlyDeleter()
        } else {
            let inner = makeDeleter(rt, state.ledger)
            deleter = state.guardedDeleter(inner, root)
        }
        let run = TrimRun(
            root: root, runtime: rt, goal: goal, state: state, dryRun: dryRun, deleter: deleter, progress: progress)
        state.events.reserve(run.expectedVictims)
        return run
    }

    /// Frees `bytes` across the goal's roots in order, each trimmed toward its total minus what is still needed,
    /// each by its own rules (`MemberTurns`): files in use only once no root has anything else. A root waiting for
    /// `trim_after_idle` gives last, and only what brings free space back to the low watermark: below it the disk
    /// is about to fill, which fails every writer, the busy client included; above it the purge is for comfort,
    /// and a deletion under a running build would fail that build.
    private func free(_ bytes: Int64, _ goal: EvictionGoal, _ state: inout PipelineState, _ progress: Progress?)
        -> EvictionOutcome
    {
        let urgent = goal.watermarks.map { max(0, bytes - ($0.high - $0.low)) } ?? bytes
        /// A root's run, trimming it toward its total minus what is still wanted.
        func run(_ id: RootID, wanting remaining: Int64, _ state: inout PipelineState, reportOnly: Bool = false)
            -> TrimRun?
        {
            let total = state.ledger.total(id)
            guard total > 0 else { return nil }
            var perRoot = goal
            perRoot.target = .total(max(0, total - remaining))
            perRoot.limit = goal.limit ?? state.roots[id]?.settings.deleteRate
            return makeRun(id, perRoot, &state, progress, reportOnly: reportOnly)
        }
        var members = MemberTurns(goal)
        for (inUse, waiters) in [(false, false), (true, false), (false, true), (true, true)] {
            members.nextRound(inUse: inUse, overriding: waiters ? [.trimAfterIdle] : [])
            let wanted = waiters ? urgent : bytes
            var i = goal.roots.startIndex
            while members.freed < wanted && i < goal.roots.endIndex {
                let id = goal.roots[i], remaining = wanted - members.freed
                if !members.take(from: id, &state, making: { run(id, wanting: remaining, &$0) }) { i += 1 }
            }
        }
        let missing = max(0, bytes - members.freed) // what a skipped root's line says it was asked for
        return members.finish(&state) { run($0, wanting: missing, &$1, reportOnly: true) }
    }

    /// A group over its shared quota: one victim at a time (a file, or a whole unit) from the member furthest above
    /// its fair share (or least under it, once all are under), until the members' sum is at the target or nothing
    /// is left; a member that cannot give now is skipped and the others give its share (`MemberTurns`).
    private func trimGroup(to target: Int64, _ goal: EvictionGoal, _ state: inout PipelineState) -> EvictionOutcome {
        var members = MemberTurns(goal)
        for inUse in [false, true] {
            members.nextRound(inUse: inUse)
            while true {
                var usage: [RootID: Int64] = [:]
                for id in goal.roots { usage[id] = members.usage(id, state) }
                guard usage.values.reduce(0, +) > target else { break }
                func over(_ id: RootID) -> Int64 { (usage[id] ?? 0) - (goal.shares[id] ?? 0) }
                guard let member = goal.roots.filter({ members.isOpen($0) }).max(by: { over($0) < over($1) }) else {
                    break
                }
                _ = members.take(from: member, &state) { makeRun(member, goal, &$0, nil) }
            }
        }
        return members.finish(&state) { makeRun($0, goal, &$1, nil, reportOnly: true) }
    }
}

/// What the evictor hands on after a goal: the `trim` reports, and the names the ledger updater stats again: the
/// victims its re-check found changed on disk (replaced or rewritten since they were counted), and the other names
/// of deleted files' inodes.
struct EvictionOutcome {
    var reports: [TrimReport] = []
    var changed: [RecordID] = []

    /// Finishes `run` and keeps what it reported.
    @discardableResult
    mutating func add(_ run: inout TrimRun, _ state: inout PipelineState) -> TrimReport {
        let report = run.finish(&state)
        reports.append(report)
        changed += run.changed
        return report
    }
}
