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

    /// Clears `ids`; returns the report, and the evictor's outcome for the engine to apply: what went (the emptied
    /// folders too), the files the re-check found changed on disk (to be statted again).
    func run(
        _ ids: [RootID], _ ledger: SizeLedger, _ context: inout EvictionContext,
        progress: (@Sendable (ClearProgress) -> Void)?
    ) -> (report: ClearReport, outcome: EvictionOutcome) {
        // A root named twice is cleared once: what its first pass deleted is applied only after the clear, and a
        // second pass would read the ledger as it was before it.
        var seen = Set<RootID>()
        let ids = ids.filter { seen.insert($0).inserted }
        let names = ids.compactMap { context.roots[$0]?.name }
        let dryRun = evictor.dryRun
        func report(_ phase: ClearPhase, _ fraction: Double, freed: Int64, removed: Int, _ events: inout EventOutbox) {
            let p = ClearProgress(
                phase: phase, progress: fraction, freed: freed, removed: removed, dirs: names, dryRun: dryRun)
            events.emit(.clear(p))
            progress?(p)
        }
        report(.preCalculating, 0, freed: 0, removed: 0, &context.events)
        let toFree = ids.reduce(Int64(0)) { $0 + ledger.total($1) }
        var freed: Int64 = 0
        var removed = 0
        report(.cleaning, 0, freed: 0, removed: 0, &context.events)
        var lastReported = 0.0
        var all = EvictionOutcome()
        for id in ids {
            let (freedBefore, removedBefore) = (freed, removed)
            var outcome = evictor.run(
                EvictionGoal(reason: .clear, roots: [id], target: .everything), ledger, &context
            ) {
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
            freed = freedBefore + (r?.freed ?? 0)
            removed = removedBefore + (r?.removed ?? 0)
            // One root's trim: one pending list at most (none in a dry run); the folders it empties join it.
            var pending = outcome.removals.popLast() ?? PendingRemovals(id, in: ledger)
            if context.roots[id]?.settings.pruneDirs == true { pruneEmptyDirectories(id, &pending, ledger, &context) }
            if !pending.isEmpty { outcome.removals.append(pending) }
            all.add(outcome)
        }
        report(.postCalculating, 1, freed: freed, removed: removed, &context.events)
        report(.done, 1, freed: freed, removed: removed, &context.events)
        return (ClearReport(removed: removed, freed: freed, dirs: names), all)
    }

    /// Removes the subdirectories of a root that hold nothing, deepest first (never the root itself), under the
    /// clear's client locks: none once the root's lock was lost, none in a unit whose lock is held or was found held
    /// (or unusable) earlier in the clear. Empty: every file and folder in it gone on disk, by the clear (`pending`)
    /// or before it; the folders removed join `pending`.
    private func pruneEmptyDirectories(
        _ id: RootID, _ pending: inout PendingRemovals, _ ledger: SizeLedger, _ context: inout EvictionContext
    ) {
        guard let top = ledger.account(id)?.rootNode, let rt = context.roots[id] else { return }
        var order: [NodeID] = []
        ledger.forEachNode(under: top) { order.append($0) }
        // The goal's unit lock set: a unit found busy earlier in this clear stays busy here.
        var deleter = context.clientLocks.guardedDeleter(evictor.makeDeleter(rt, ledger), id, rt)
        defer { deleter.finish() }
        for n in order.reversed() where n != top && !pending.contains(node: n) && pending.isEmptied(n, in: ledger) {
            if deleter.deleteEmptyDirectory(n, in: ledger, withSymlinks: false) { pending.removeFolder(n, in: ledger) }
        }
    }
}
