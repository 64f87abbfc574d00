import CacheWardenLedger

/// The outcome of a manual clear.
public struct ClearReport: Sendable, Equatable {
    /// Files removed.
    public var removed: Int
    /// Bytes freed.
    public var freed: Int64
    /// Directories cleared.
    public var dirs: [String]
}

/// A manual clear over one or more roots with mPaaS's progress phases: `pre_calculating` (sizes from the ledger,
/// no rescan), `cleaning` (progress = bytes freed / bytes to free, reported every 5 %), `post_calculating`, `done`
/// (with `freed` and `removed`). Files go oldest first through the evictor; protected files stay; the roots always
/// stay, and emptied subdirectories are removed only with `prune_dirs`.
struct ClearRunner {
    let evictor: Evictor

    /// Clears `ids`; returns the report and the files the re-check found changed on disk (to be statted again).
    func run(
        _ ids: [RootID], _ state: inout PipelineState,
        progress: (@Sendable (ClearProgress) -> Void)?
    ) -> (report: ClearReport, changed: [RecordID]) {
        let names = ids.compactMap { state.roots[$0]?.name }
        let dryRun = evictor.dryRun
        func report(_ phase: ClearPhase, _ fraction: Double, freed: Int64, removed: Int, _ state: inout PipelineState) {
            let p = ClearProgress(
                phase: phase, progress: fraction, freed: freed, removed: removed, dirs: names, dryRun: dryRun)
            state.events.emit(.clear(p))
            progress?(p)
        }
        report(.preCalculating, 0, freed: 0, removed: 0, &state)
        let toFree = ids.reduce(Int64(0)) { $0 + state.ledger.total($1) }
        var freed: Int64 = 0
        var removed = 0
        report(.cleaning, 0, freed: 0, removed: 0, &state)
        var lastReported = 0.0
        var changed: [RecordID] = []
        for id in ids {
            let (freedBefore, removedBefore) = (freed, removed)
            let outcome = evictor.run(EvictionGoal(reason: .clear, roots: [id], target: .everything), &state) {
                n, f, events in
                freed = freedBefore + f
                removed = removedBefore + n
                let fraction = toFree > 0 ? Double(freed) / Double(toFree) : 1
                guard fraction - lastReported >= 0.05 else { return }
                lastReported = fraction
                let p = ClearProgress(
                    phase: .cleaning, progress: min(fraction, 1), freed: freed, removed: removed,
                    dirs: names, dryRun: dryRun)
                events.emit(.clear(p))
                progress?(p)
            }
            let r = outcome.reports.first
            changed += outcome.changed
            freed = freedBefore + (r?.freed ?? 0)
            removed = removedBefore + (r?.removed ?? 0)
            if state.roots[id]?.settings.pruneDirs == true { changed += pruneEmptyDirectories(id, &state) }
        }
        report(.postCalculating, 1, freed: freed, removed: removed, &state)
        report(.done, 1, freed: freed, removed: removed, &state)
        return (ClearReport(removed: removed, freed: freed, dirs: names), changed)
    }

    /// Removes the subdirectories of a root that hold nothing, deepest first (never the root itself), under the
    /// clear's client locks: none once the root's lock was lost, none in a unit whose lock is held or was found held
    /// (or unusable) earlier in the clear. Returns what the ledger said to stat again (nothing: they hold no file).
    private func pruneEmptyDirectories(_ id: RootID, _ state: inout PipelineState) -> [RecordID] {
        guard let top = state.ledger.account(id)?.rootNode, let rt = state.roots[id] else { return [] }
        var stale: [RecordID] = []
        var order: [NodeID] = []
        state.ledger.forEachNode(under: top) { order.append($0) }
        // The goal's unit lock set: a unit found busy earlier in this clear stays busy here.
        let inner = evictor.makeDeleter(rt, state.ledger)
        var deleter = state.guardedDeleter(inner, id)
        defer { deleter.finish() }
        for n in order.reversed() where n != top {
            guard state.ledger.isLive(n), state.ledger.node(n).files.isEmpty, state.ledger.node(n).subdirs.isEmpty
            else { continue }
            if deleter.deleteEmptyDirectory(n, in: state.ledger, withSymlinks: false) {
                stale += state.ledger.removeSubtree(n)
            }
        }
        return stale
    }
}
