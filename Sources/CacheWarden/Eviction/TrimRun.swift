import Dispatch

/// One trim of one root, from the first victim to its `trim` report.
struct TrimRun {
    let root: RootID
    let runtime: RootRuntime
    let reason: TrimReason
    let target: EvictionGoal.Target
    let before: Int64
    let dryRun: Bool
    var deleter: any FileDeleter
    let progress: Evictor.Progress?

    /// The total as it will be once this trim is done (a dry run subtracts what it would delete).
    private var projected: Int64 = 0
    private var removed = 0
    /// Popped candidates that stay: they go back to the heap at the end.
    private var kept: [RecordID] = []
    private var beingWritten: [(RecordID, Int64)] = []
    /// Victims' directory paths, built once per trim (victims cluster in few directories).
    private var directoryPaths: [NodeID: [UInt8]] = [:]

    init(root: RootID, runtime: RootRuntime, reason: TrimReason, target: EvictionGoal.Target, before: Int64,
         dryRun: Bool, deleter: any FileDeleter, progress: Evictor.Progress?) {
        self.root = root
        self.runtime = runtime
        self.reason = reason
        self.target = target
        self.before = before
        self.dryRun = dryRun
        self.deleter = deleter
        self.progress = progress
        projected = before
    }

    private func wantsMore(age: Int64) -> Bool {
        switch target {
        case .everything: true
        case .total(let bytes): projected > bytes
        case .olderThan(let cutoff): age < cutoff
        case .free: false   // split into per-root totals by the evictor
        }
    }

    /// Takes victims from the heap, oldest group first, until the target is met or no candidate is left.
    mutating func evictOldestFirst(_ state: inout PipelineState) {
        outer: while true {
            let group = state.ledger.popOldestGroup(root)
            if group.isEmpty { break }
            for (i, (r, age)) in group.enumerated() {
                guard wantsMore(age: age) else {
                    kept.append(contentsOf: group[i...].map(\.record))
                    break outer
                }
                if !runtime.protect.isEmpty && runtime.protect.matches(relativePath(r, state.ledger)) { kept.append(r); continue }
                if target != .everything && state.ledger.inode(ofRecord: r)?.writing == true { beingWritten.append((r, age)); continue }
                if !evict(r, &state) { kept.append(r) }
            }
        }
        // Files being written are victims only when nothing else was left.
        for (r, age) in beingWritten {
            if wantsMore(age: age), evict(r, &state) { continue }
            kept.append(r)
        }
    }

    /// Deletes one victim (if the veto hook agrees); returns whether it counts as evicted.
    private mutating func evict(_ r: RecordID, _ state: inout PipelineState) -> Bool {
        let rel = relativePath(r, state.ledger)
        let size = state.ledger.inode(ofRecord: r)?.bytes ?? 0
        if let veto = runtime.settings.shouldEvict,
           !veto(EvictionCandidate(directory: runtime.name, file: PathBytes.display(rel), size: size, reason: reason)) {
            return false
        }
        switch deleter.delete(r, in: state.ledger) {
        case .removed:
            state.ledger.removeRecord(r)
            projected = state.ledger.total(root)
        case .simulated:
            if (state.ledger.inode(ofRecord: r)?.names ?? 1) <= 1 { projected -= size }
            kept.append(r)
        case .vanished:
            // Renamed (or deleted) by someone else since it was counted: not ours. The changes that say where it
            // went are queued and will file it there; the next candidate takes its place.
            return false
        case .changed:
            // Not the file we counted (replaced, or a symlink on the way): leave it, and stat it again.
            state.ledger.needsStat.append(r)
            return false
        case .failed(let errno):
            state.events.error("cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(rel), kind: "delete")
            return false
        }
        removed += 1
        state.events.emit(.evict(Eviction(dir: runtime.name, file: PathBytes.display(rel), size: size, reason: reason, dryRun: dryRun)))
        progress?(removed, before - projected, &state.events)
        return true
    }

    private mutating func relativePath(_ r: RecordID, _ ledger: SizeLedger) -> [UInt8] {
        let rec = ledger.record(r)
        if directoryPaths[rec.dir] == nil { directoryPaths[rec.dir] = ledger.relativePath(of: rec.dir) }
        var path = directoryPaths[rec.dir] ?? []
        if !path.isEmpty { path.append(PathBytes.separator) }
        ledger.names.append(rec.name, to: &path)
        return path
    }

    /// Puts the kept candidates back, releases the deleter and emits the `trim` report.
    mutating func finish(_ state: inout PipelineState, startedAt started: UInt64) -> TrimReport {
        for r in kept where state.ledger.isLive(r) { state.ledger.syncVictim(r) }
        deleter.finish()
        let after = dryRun ? projected : state.ledger.total(root)
        let goal: Int64
        switch target {
        case .everything: goal = 0
        case .total(let bytes): goal = bytes
        default: goal = after
        }
        let report = TrimReport(
            dir: runtime.name, reason: reason, removed: removed, freed: before - after, totalBefore: before, total: after,
            quota: runtime.settings.quota, target: goal,
            durationMilliseconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6,
            shortBy: max(0, after - goal), dryRun: dryRun)
        state.events.emit(.trim(report))
        return report
    }
}
