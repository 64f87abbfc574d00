import Foundation

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
/// no rescan), `cleaning` (progress = bytes freed / bytes to free), `post_calculating`, `done` (with `freed`
/// and `removed`). Files are removed oldest first; protected files stay; the roots always stay, and emptied
/// subdirectories are removed only with `pruneDirs`.
extension Engine {
    func clear(_ ids: [Int32], progress: (@Sendable (ClearProgress) -> Void)?) -> ClearReport {
        let names = ids.compactMap { roots[$0]?.settings.name }
        func report(_ phase: ClearPhase, _ fraction: Double, freed: Int64, removed: Int) {
            let p = ClearProgress(phase: phase, progress: fraction, freed: freed, removed: removed, dirs: names, dryRun: dryRun)
            emit(.clear(p))
            progress?(p)
        }
        report(.preCalculating, 0, freed: 0, removed: 0)
        let toFree = ids.reduce(Int64(0)) { $0 + (ledger.accounts[$1]?.total ?? 0) }
        var freed: Int64 = 0
        var removed = 0
        var lastReported = 0.0
        report(.cleaning, 0, freed: 0, removed: 0)
        for id in ids {
            let freedBefore = freed
            let removedBefore = removed
            let r = trim(id, reason: .clear, goal: TrimGoal(everything: true)) { n, f in
                freed = freedBefore + f
                removed = removedBefore + n
                let fraction = toFree > 0 ? Double(freed) / Double(toFree) : 1
                if fraction - lastReported >= 0.05 {
                    lastReported = fraction
                    report(.cleaning, min(fraction, 1), freed: freed, removed: removed)
                }
            }
            freed = freedBefore + (r?.freed ?? 0)
            removed = removedBefore + (r?.removed ?? 0)
            if roots[id]?.settings.pruneDirs == true && !dryRun { pruneEmptyDirectories(id) }
        }
        report(.postCalculating, 1, freed: freed, removed: removed)
        report(.done, 1, freed: freed, removed: removed)
        return ClearReport(removed: removed, freed: freed, dirs: names)
    }

    /// Removes the subdirectories of a root that hold nothing, deepest first (never the root itself).
    private func pruneEmptyDirectories(_ id: Int32) {
        guard let rt = roots[id], let account = ledger.accounts[id] else { return }
        var order: [Int32] = []
        var stack = [account.rootNode]
        while let n = stack.popLast() {
            order.append(n)
            stack.append(contentsOf: ledger.node(n).subdirs.values)
        }
        var remover = SafeRemover(ledger: ledger, root: id, rootPath: rt.pathBytes)
        defer { remover.close() }
        for n in order.reversed() where n != account.rootNode {
            let node = ledger.node(n)
            guard node.live, node.files.isEmpty, node.subdirs.isEmpty else { continue }
            if remover.removeEmptyDirectory(n) {
                var dropped: [Int32] = []
                ledger.removeSubtree(n, droppedWatches: &dropped)
                dropWatches(dropped, remove: true)
            }
        }
    }
}
