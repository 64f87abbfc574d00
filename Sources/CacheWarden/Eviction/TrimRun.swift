import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch

/// One trim of one root: takes candidates oldest first from the root's heap and decides, for each, whether it may
/// go. `evictNext` deletes one victim at a time (`evictNextVictim`: a whole unit with `evict_unit`), so a shared
/// trim can take turns between members (`MemberTurns`); a trim of a single root simply calls it until the target
/// is met.
///
/// Who is spared: protected files (the `protect` globs, and every `CACHEDIR.TAG`: the tag marks the folder, not
/// its contents) and vetoed ones, always; files younger than `min_age`, for size-driven trims (quota, `max_files`,
/// group, low disk); files in use (being written, or open with `spare_open`) while other candidates remain — for
/// an age expiry they wait for a later pass. A clear takes everything but protected files and tags.
struct TrimRun {
    let root: RootID
    let runtime: RootRuntime
    let goal: EvictionGoal
    let before: Int64
    let beforeFiles: Int
    let dryRun: Bool
    var deleter: any FileDeleter
    let progress: Evictor.Progress?
    /// On the real clock, not the watcher's: the report's duration is what the work cost.
    let started = DispatchTime.now().uptimeNanoseconds
    private let youngAfter: Int64?

    /// The total and file count as they will be once this trim is done (a dry run subtracts what it would delete).
    var projected: Int64
    var projectedFiles: Int
    var removed = 0
    /// Candidates that stay: they go back to the heap at the end.
    private var kept: [RecordID] = []
    private var inUse: [(record: RecordID, age: Int64)] = []
    private var queue: [(record: RecordID, age: Int64)] = []
    private var queueIndex = 0
    private var heapDone = false
    private var popped = false
    var spared = SparedFiles()
    var paced = false
    /// The trim waits for a file larger than its target to be finished (see `evictOversize`).
    var held = false
    /// Victims' directory paths, built once per trim (victims cluster in few directories).
    private var directoryPaths: [NodeID: [UInt8]] = [:]
    /// The last of them (victims come in runs from one directory).
    private var lastDirectory: (node: NodeID, path: [UInt8])?
    private var pathBuffer: [UInt8] = []
    /// Names to stat again, handed on (`EvictionOutcome.changed`): victims the deleter's re-check found changed on
    /// disk, and the other names of deleted files' inodes, which the ledger returns with each removal.
    var changed: [RecordID] = []
    /// A dry run's deletions of hard-linked names, per inode: the bytes would be freed with the last name.
    private var simulatedNames: [UInt64: Int] = [:]
    /// The files of units a dry run said it would delete whole: not taken again by the file-by-file pass after.
    var simulatedUnitFiles = Set<RecordID>()
    /// The pointers (`evict_pointers`) a dry run said it would delete, by path: each counted once a trim.
    var simulatedLinks = Set<[UInt8]>()
    /// In a shared trim (group, low disk): files in use wait until no member has anything else (`MemberTurns`).
    var sparesInUse = false
    /// In a shared trim: why this member gave nothing, for its `trim` line.
    var skipped: MemberSkip?
    /// With `evict_unit`, in a trim taking turns: the root's units, oldest first, collected at the first turn
    /// (`evictNextUnit`), and the next one to look at.
    var unitQueue: [Unit]?
    var unitIndex = 0
    /// A client's lock of the root no longer stands as taken: the trim stopped there (nothing more is deleted).
    var lockLost = false

    init(
        root: RootID, runtime: RootRuntime, goal: EvictionGoal, state: PipelineState, dryRun: Bool,
        deleter: any FileDeleter, progress: Evictor.Progress?
    ) {
        self.root = root
        self.runtime = runtime
        self.goal = goal
        self.dryRun = dryRun
        self.deleter = deleter
        self.progress = progress
        before = state.ledger.total(root)
        beforeFiles = state.ledger.account(root)?.files ?? 0
        projected = before
        projectedFiles = beforeFiles
        let sizeDriven = [.quota, .maxFiles, .groupQuota, .lowDisk].contains(goal.reason)
        youngAfter =
            sizeDriven
            ? runtime.settings.minAge.map { Nanoseconds.before(state.clock.fileTimeNanoseconds, seconds: $0) } : nil
    }

    /// About how many files this trim removes, if its target says (the files' share of the bytes to free).
    var expectedVictims: Int {
        switch goal.target {
        case .total(let bytes) where before > bytes: Int(Double(beforeFiles) * Double(before - bytes) / Double(before))
        case .files(let n): max(0, beforeFiles - n)
        default: 0
        }
    }

    /// Whether the goal wants another file of this age gone (the group loop decides for group members).
    func wants(age: Int64) -> Bool {
        switch goal.target {
        case .everything, .groupTotal: true
        case .total(let bytes): projected > bytes
        case .files(let n): projectedFiles > n
        case .olderThan(let cutoff): age < cutoff
        case .free: false // split into per-root totals by the evictor
        }
    }

    /// The next candidate, oldest first; once the heap is exhausted, the files that were in use.
    private mutating func nextCandidate(_ state: inout PipelineState) -> (record: RecordID, age: Int64)? {
        if queueIndex < queue.count {
            defer { queueIndex += 1 }
            return queue[queueIndex]
        }
        if !heapDone {
            // The first pop takes as many as the target says at once (one sort instead of a sift per file).
            let wanted = popped ? 1 : min(expectedVictims, goal.limit ?? .max)
            popped = true
            queue = state.ledger.popOldest(root, atLeast: max(1, wanted))
            queueIndex = 0
            if !queue.isEmpty { return nextCandidate(&state) }
            heapDone = true
        }
        let takesInUse = goal.target != .everything && !isAgeDriven && !sparesInUse
        return takesInUse && !inUse.isEmpty ? inUse.removeFirst() : nil
    }

    private var isAgeDriven: Bool { if case .olderThan = goal.target { return true } else { return false } }

    /// Deletes the next victim. Returns false when the target is met, the pass's limit is reached, or no candidate
    /// is left.
    mutating func evictNext(_ state: inout PipelineState) -> Bool {
        while !lockLost, let (r, age) = nextCandidate(&state) {
            if simulatedUnitFiles.contains(r) { kept.append(r); continue }
            guard wants(age: age) else { kept.append(r); return false }
            if let limit = goal.limit, removed >= limit { kept.append(r); paced = true; return false }
            if let reason = spareReason(r, age: age, state) {
                spared.count(reason)
                kept.append(r)
                continue
            }
            if !heapDone && goal.target != .everything && isInUse(r, state) {
                inUse.append((r, age))
                continue
            }
            if evict(r, reason: goal.reason, &state) { return true }
            kept.append(r)
        }
        return false
    }

    /// Evicts until the target is met (a trim of one root).
    mutating func evictOldestFirst(_ state: inout PipelineState) {
        if goal.reason == .quota, case .total(let target) = goal.target, !evictOversize(target: target, &state) {
            return
        }
        while evictNext(&state) {}
    }

    func isInUse(_ r: RecordID, _ state: PipelineState) -> Bool {
        state.ledger.inode(ofRecord: r)?.writing == true || (runtime.settings.spareOpen && state.ledger.isOpen(r))
    }

    /// Why `r` must stay, if it must. A `CACHEDIR.TAG` always stays — except inside an eviction unit, which goes
    /// whole with the tag of its own (a uvx environment in uv's `archive-v0/<id>/` carries one).
    mutating func spareReason(_ r: RecordID, age: Int64, _ state: PipelineState, insideUnit: Bool = false)
        -> SpareReason?
    {
        if !insideUnit && state.ledger.withName(ofRecord: r, { $0.elementsEqual("CACHEDIR.TAG".utf8) }) {
            return .protected
        }
        if !runtime.protect.isEmpty && runtime.protect.matches(relativePath(r, state.ledger)) { return .protected }
        if let youngAfter, age > youngAfter { return .young }
        if isAgeDriven && isInUse(r, state) { return .inUse }
        return nil
    }

    /// Files larger than the whole target: keeping any of them leaves the directory above its target whatever
    /// else goes, so when smaller files exist too, the large ones go first, largest first and each alone
    /// (`"reason":"oversize"`), and the smaller ones stay as far as the target allows. (When every file is larger
    /// than the target, all must go: plain oldest-first order.)
    /// Returns false when the trim should wait (`held`): a file larger than the target is still being finished —
    /// written or open, or under a protected temporary name written in the last `holdWindow` (pip and ccache
    /// write `*.tmp` and rename it into place). Deleting the smaller files could not reach the target while it
    /// stays, so nothing is deleted now; its close or rename is a change, and the trim that follows takes it
    /// alone (the engine also consults the policy again once the window has passed).
    private mutating func evictOversize(target: Int64, _ state: inout PipelineState) -> Bool {
        guard let account = state.ledger.account(root), account.largestSeen > target else { return true }
        for _ in 0..<8 where projected > target {
            var largest: (record: RecordID, bytes: Int64)?
            var anySmaller = false
            state.ledger.forEachRecord(under: account.rootNode) { r in
                guard let inode = state.ledger.inode(ofRecord: r), inode.names == 1 else { return }
                if inode.bytes <= target {
                    anySmaller = true
                } else if inode.bytes > (largest?.bytes ?? 0) {
                    largest = (r, inode.bytes)
                }
            }
            guard anySmaller, let (r, _) = largest else { return true }
            let age = state.ledger.victimAge(r)
            switch spareReason(r, age: age, state) {
            case nil where isInUse(r, state):
                spared.inUse += 1
                held = true
                return false
            case .protected where age > state.clock.fileTimeNanoseconds - Self.holdWindow:
                spared.protected += 1
                held = true
                return false
            case nil:
                state.ledger.takeOutOfVictims(r)
                guard evict(r, reason: .oversize, &state) else { state.ledger.syncVictim(r); return true }
            default:
                return true
            }
        }
        return true
    }

    /// How long a protected file larger than the target holds a trim after it was written (nanoseconds).
    static let holdWindow: Int64 = 2_000_000_000

    /// Deletes one victim (if the veto hook agrees); returns whether it counts as evicted.
    private mutating func evict(_ r: RecordID, reason: TrimReason, _ state: inout PipelineState) -> Bool {
        let rel = displayPath(r, state.ledger)
        // What this deletion frees: a file with another name left here frees nothing yet.
        let size = state.ledger.freedBytes(ofRecord: r)
        if let veto = runtime.settings.shouldEvict,
            !veto(EvictionCandidate(directory: runtime.name, file: rel, size: size, reason: reason))
        {
            spared.vetoed += 1
            return false
        }
        let outcome = deleter.delete(r, in: state.ledger, checkingAge: goal.target != .everything)
        switch outcome {
        case .removed:
            changed += state.ledger.removeRecord(r)
            projected = state.ledger.total(root)
            projectedFiles = state.ledger.account(root)?.files ?? 0
        case .simulated:
            let ino = state.ledger.record(r).ino, inode = state.ledger.inode(ofRecord: r)
            simulatedNames[ino, default: 0] += 1
            if simulatedNames[ino] == inode?.names ?? 1 { projected -= inode?.bytes ?? 0; projectedFiles -= 1 }
            kept.append(r)
        case .vanished:
            // Renamed (or deleted) by someone else since it was counted: not ours. The changes that say where it
            // went are queued and will file it there; the next candidate takes its place.
            return false
        case .changed:
            // Not the file we counted (replaced, rewritten, or a symlink on the way): leave it; it is statted again.
            changed.append(r)
            return false
        case .failed(let errno):
            state.events.error("cannot delete: \(errno)", dir: runtime.name, file: rel, kind: "delete")
            return false
        case .lockLost, .lockHeld, .lockUnusable:
            noteLockRefusal(outcome)
            return false
        }
        removed += 1
        state.events.emit(.evict(Eviction(dir: runtime.name, file: rel, size: size, reason: reason, dryRun: dryRun)))
        progress?(removed, before - projected, &state.events)
        return true
    }

    mutating func relativePath(_ r: RecordID, _ ledger: SizeLedger) -> [UInt8] {
        fillPath(r, ledger)
        return pathBuffer
    }

    /// Record `r`'s path as events show it.
    mutating func displayPath(_ r: RecordID, _ ledger: SizeLedger) -> String {
        fillPath(r, ledger)
        return PathBytes.display(pathBuffer)
    }

    /// Builds record `r`'s path relative to the root in `pathBuffer`, reused for every victim (no array per file).
    private mutating func fillPath(_ r: RecordID, _ ledger: SizeLedger) {
        let rec = ledger.record(r)
        if lastDirectory?.node != rec.dir {
            let path = directoryPaths[rec.dir] ?? ledger.relativePath(of: rec.dir)
            directoryPaths[rec.dir] = path
            lastDirectory = (rec.dir, path)
        }
        pathBuffer.removeAll(keepingCapacity: true)
        if let directory = lastDirectory?.path, !directory.isEmpty {
            pathBuffer.append(contentsOf: directory)
            pathBuffer.append(PathBytes.separator)
        }
        ledger.appendName(ofRecord: r, to: &pathBuffer)
    }

    /// Why this run, asked for a victim in a shared trim, gave nothing: everything left was younger than `min_age`,
    /// or spared otherwise (files in use it still held back count in `spared.inUse`), or nothing was left.
    mutating func reasonForNothing() -> MemberSkip {
        spared.inUse += inUse.count
        if spared.isEmpty { return .nothingLeft }
        return spared.young == spared.protected + spared.inUse + spared.young + spared.vetoed ? .minAge : .spared
    }

    /// Puts the kept candidates back, releases the deleter and emits the `trim` report.
    mutating func finish(_ state: inout PipelineState) -> TrimReport {
        for r in kept + queue[min(queueIndex, queue.count)...].map(\.record) + inUse.map(\.record)
        where state.ledger.isLive(r) {
            state.ledger.syncVictim(r)
        }
        queue.removeAll()
        inUse.removeAll()
        if let trouble = deleter.trashTrouble {
            state.events.error(
                "a file moved into \(TrashFolder.name) and kept could not be put back (\(trouble)); "
                    + "it stays there and goes at the next start",
                dir: runtime.name, kind: "trash")
        }
        if let refused = deleter.renameRefused, state.roots[root]?.renameRefused == nil {
            state.roots[root]?.renameRefused = refused
        }
        if deleter.leftInTrash { state.trashToEmpty.insert(root) }
        deleter.finish()
        let after = dryRun ? projected : state.ledger.total(root)
        let target: Int64
        switch goal.target {
        case .everything: target = 0
        case .total(let bytes): target = bytes
        case .groupTotal: target = goal.shares[root] ?? after
        default: target = after
        }
        var report = TrimReport(
            dir: runtime.name, reason: goal.reason, removed: removed, freed: before - after, totalBefore: before,
            total: after, quota: runtime.settings.quota, target: target,
            durationMilliseconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6,
            shortBy: max(0, after - target), dryRun: dryRun)
        if case .files(let n) = goal.target {
            report.shortBy = 0; report.targetFiles = n; report.filesShortBy = max(0, projectedFiles - n)
        }
        report.deferredSeconds = goal.deferredSeconds
        report.group = goal.group
        report.lowWatermark = goal.watermarks?.low
        report.highWatermark = goal.watermarks?.high
        report.paced = paced
        report.held = held
        report.skipped = skipped
        if skipped?.isWait == true { report.shortBy = 0 }
        if report.shortBy > 0 || (report.filesShortBy ?? 0) > 0 || held || skipped != nil { report.spared = spared }
        state.events.emit(.trim(report))
        return report
    }
}

/// Why a candidate was left in place.
enum SpareReason { case protected, inUse, young }

extension SparedFiles {
    mutating func count(_ reason: SpareReason) {
        switch reason {
        case .protected: protected += 1
        case .inUse: inUse += 1
        case .young: young += 1
        }
    }
}
