import Dispatch

/// Carries out eviction goals for every policy (quota, age, low disk, manual trim, clear): it picks victims
/// oldest first and deletes them through the deleter the watcher's mode gave it.
///
/// Victims come from the root's heap one age group at a time (ties ordered by path), so choosing k victims costs
/// O(k log n). A file being written (modified, not closed) is skipped while others remain; protected and vetoed
/// files are skipped always. A deletion is taken out of the ledger at once, so its later `IN_DELETE` finds nothing
/// to subtract twice. An `evict` event means CacheWarden deleted that file (or, in a dry run, would have): a victim
/// that vanished under it (renamed by its client) is left to the changes that say where it went, and the trim goes
/// on with the next candidate.
struct Evictor {
    /// The deleter for one root and one trim (`SafeRemover`, or `DryRunDeleter` in a dry run).
    let makeDeleter: (RootID, SizeLedger) -> any FileDeleter
    let dryRun: Bool

    /// Progress of a running trim: files removed and bytes freed so far, and the outbox for events about it.
    typealias Progress = (_ removed: Int, _ freed: Int64, _ events: inout EventOutbox) -> Void

    /// Works toward `goal`; returns one report per root trimmed (each also emitted as a `trim` event).
    @discardableResult
    func run(_ goal: EvictionGoal, _ state: inout PipelineState, progress: Progress? = nil) -> [TrimReport] {
        var reports: [TrimReport] = []
        switch goal.target {
        case .free(let bytes):
            var remaining = bytes
            for id in goal.roots where remaining > 0 {
                let total = state.ledger.total(id)
                guard total > 0 else { continue }
                guard let report = trim(id, goal.reason, target: .total(max(0, total - remaining)), &state, progress) else { continue }
                remaining -= report.freed
                reports.append(report)
            }
        default:
            for id in goal.roots {
                if let report = trim(id, goal.reason, target: goal.target, &state, progress) { reports.append(report) }
            }
        }
        return reports
    }

    /// One root's trim.
    private func trim(_ root: RootID, _ reason: TrimReason, target: EvictionGoal.Target, _ state: inout PipelineState,
                      _ progress: Progress?) -> TrimReport? {
        guard let rt = state.roots[root], !rt.lost, state.ledger.account(root) != nil else { return nil }
        let started = DispatchTime.now().uptimeNanoseconds
        if !(state.ledger.account(root)?.ordered ?? false) { state.ledger.setOrdered(root, true) }
        var run = TrimRun(root: root, runtime: rt, reason: reason, target: target, before: state.ledger.total(root),
                          dryRun: dryRun, deleter: makeDeleter(root, state.ledger), progress: progress)
        run.evictOldestFirst(&state)
        return run.finish(&state, startedAt: started)
    }
}
