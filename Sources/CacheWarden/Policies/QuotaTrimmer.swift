import Foundation
import Glibc

/// What a trim aims for: a total at or below `target`, and/or no file older than `olderThan`.
struct TrimGoal {
    var target: Int64?
    var olderThan: Int64?
    /// Remove every file (a clear): both limits ignored.
    var everything = false
}

/// Oldest-first eviction for one root, shared by every policy (quota, age, low disk, manual trim, clear).
///
/// Victims come from the root's heap one age-group at a time (ties ordered by path), so choosing k victims costs
/// O(k log n) rather than a sort of the directory. A file being written (modified, not closed) is skipped while
/// others remain; protected and vetoed files are skipped always. Deletions go through `SafeRemover` and are taken
/// out of the ledger at once, so their later `IN_DELETE` records find nothing to subtract twice.
extension Engine {
    @discardableResult
    func trim(_ root: Int32, reason: TrimReason, goal: TrimGoal,
              progress: ((_ removed: Int, _ freed: Int64) -> Void)? = nil) -> TrimReport? {
        guard let rt = roots[root], !rt.lost, let before = ledger.accounts[root]?.total else { return nil }
        let started = DispatchTime.now().uptimeNanoseconds
        var projected = before
        var removed = 0
        var held: [(Int32, Int64)] = []
        var beingWritten: [(Int32, Int64)] = []
        var simulated: [(Int32, Int64)] = []
        var remover = SafeRemover(ledger: ledger, root: root, rootPath: rt.pathBytes)
        defer { remover.close() }
        // Each unlink queues our own IN_DELETE; with the read source armed, every one of them also wakes the
        // event loop's poller. Hold the source while deleting: the records are read in one batch afterwards.
        let holdSource = source != nil && !sourcePaused
        if holdSource { source?.suspend() }
        defer { if holdSource { source?.resume() } }

        func wantsMore(age: Int64?) -> Bool {
            if goal.everything { return true }
            if let target = goal.target, projected > target { return true }
            if let cutoff = goal.olderThan, let age, age < cutoff { return true }
            return false
        }

        // Victims cluster in few directories: their paths are built once per trim.
        var directoryPaths: [Int32: [UInt8]] = [:]
        func relativePath(_ r: Int32) -> [UInt8] {
            let rec = ledger.fileRecord(r)
            if directoryPaths[rec.dir] == nil { directoryPaths[rec.dir] = ledger.relativePath(of: rec.dir) }
            return SizeLedger.join(directoryPaths[rec.dir]!, rec.name)
        }

        func evict(_ r: Int32, age: Int64) -> Bool {
            let rel = relativePath(r)
            let size = ledger.inode(ofRecord: r)?.bytes ?? 0
            if let veto = rt.settings.shouldEvict {
                let candidate = EvictionCandidate(directory: rt.settings.name, file: Engine.display(rel), size: size, reason: reason)
                if !veto(candidate) { return false }
            }
            if dryRun {
                let links = ledger.inode(ofRecord: r)?.links ?? 1
                if links <= 1 { projected -= size }
                simulated.append((r, age))
                removed += 1
                emit(.evict(Eviction(dir: rt.settings.name, file: Engine.display(rel), size: size, reason: reason, dryRun: true)))
                return true
            }
            switch remover.remove(record: r) {
            case .removed, .vanished:
                ledger.removeRecord(r)
                projected = ledger.accounts[root]!.total
                removed += 1
                emit(.evict(Eviction(dir: rt.settings.name, file: Engine.display(rel), size: size, reason: reason, dryRun: false)))
                progress?(removed, before - projected)
                return true
            case .changed:
                // Not the file we counted (replaced, or a symlink on the way): leave it, re-stat it.
                markDirty(r, [])
                return false
            case .failed(let errno):
                emitError("cannot delete: \(errno)", dir: rt.settings.name, file: Engine.display(rel), kind: "delete")
                return false
            }
        }

        outer: while true {
            let group = ledger.popOldestGroup(root)
            if group.isEmpty { break }
            for (i, (r, age)) in group.enumerated() {
                guard wantsMore(age: age) else {
                    for rest in group[i...] { held.append(rest) }
                    break outer
                }
                if !rt.protect.isEmpty && rt.protect.matches(relativePath(r)) { held.append((r, age)); continue }
                if !goal.everything && ledger.inode(ofRecord: r)?.writing == true { beingWritten.append((r, age)); continue }
                if !evict(r, age: age) { held.append((r, age)) }
            }
        }
        // Files being written are victims only when nothing else was left.
        for (r, age) in beingWritten {
            if wantsMore(age: age), evict(r, age: age) { continue }
            held.append((r, age))
        }
        for (r, age) in held + simulated { ledger.pushBack(r, age: age) }

        let after = dryRun ? projected : ledger.accounts[root]!.total
        let target = goal.everything ? 0 : (goal.target ?? after)
        let report = TrimReport(
            dir: rt.settings.name, reason: reason, removed: removed, freed: before - after, totalBefore: before,
            total: after, quota: rt.settings.quota, target: target,
            durationMilliseconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6,
            shortBy: max(0, after - target), dryRun: dryRun)
        emit(.trim(report))
        return report
    }
}
