import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch
import SystemPackage

/// One trim of one root: takes candidates oldest first from the root's heap and decides, for each, whether it may
/// go. `evictNext` deletes one victim at a time (`evictNextVictim`: a whole unit with `evict_unit`), so a shared
/// trim can take turns between members (`MemberTurns`); a trim of a single root simply calls it until the target
/// is met.
///
/// Who is spared: protected files (the `protect` globs, and every `CACHEDIR.TAG`: the tag marks the folder, not
/// its contents) and vetoed ones, always; files younger than `min_age`, for size-driven trims (quota, `max_files`,
/// group, low disk); files in use (being written, or open with `spare_open`) while other candidates remain — for
/// an age expiry they wait for a later pass. A clear takes everything but protected files and tags.
///
/// A trim reads the ledger and never writes it: every method takes it as a value. What it deletes goes into
/// `pending`, which it reads through (what is gone, what a deletion frees given those before it), and which its
/// driver hands on in the `EvictionOutcome` for the engine to apply once the goal is done (`Engine.evict`). A dry
/// run reads what it would have deleted the same way; its pending list is dropped.
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

    /// What this trim deleted (or, in a dry run, would have), not applied to the ledger yet.
    var pending: PendingRemovals
    /// The total and file count as they will be once this trim is done.
    var projected: Int64 { before - pending.freed }
    var projectedFiles: Int { beforeFiles - pending.freedFiles }
    var removed = 0
    /// The root's victims, oldest first (walked, not popped: the heap is the ledger's).
    private var cursor: VictimCursor
    private var inUse: [(record: RecordID, age: Int64)] = []
    private var queue: [(record: RecordID, age: Int64)] = []
    private var queueIndex = 0
    private var heapDone = false
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
    /// disk (the other names of deleted files' inodes come from the ledger when the engine applies `pending`).
    var changed: [RecordID] = []
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
    /// Handed on at the end (`EvictionOutcome.add`): a unit's rename into the trash refused here (the root's later
    /// trims go file by file at once), and units left in the trash, to be deleted a moment later.
    var renameRefused: Errno?
    private(set) var leftInTrash = false
    /// The watcher's clock's time of files (`min_age`, the hold window).
    private let fileTime: Int64

    init(
        root: RootID, runtime: RootRuntime, goal: EvictionGoal, _ ledger: SizeLedger, clock: any WardenClock,
        dryRun: Bool, deleter: any FileDeleter, progress: Evictor.Progress?
    ) {
        self.root = root
        self.runtime = runtime
        self.goal = goal
        self.dryRun = dryRun
        self.deleter = deleter
        self.progress = progress
        before = ledger.total(root)
        beforeFiles = ledger.account(root)?.files ?? 0
        pending = PendingRemovals(root, in: ledger)
        cursor = VictimCursor(root)
        let now = clock.fileTimeNanoseconds
        fileTime = now
        let sizeDriven = [.quota, .maxFiles, .groupQuota, .lowDisk].contains(goal.reason)
        youngAfter = sizeDriven ? runtime.settings.minAge.map { Nanoseconds.before(now, seconds: $0) } : nil
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
    private mutating func nextCandidate(_ ledger: SizeLedger) -> (record: RecordID, age: Int64)? {
        if queueIndex < queue.count {
            defer { queueIndex += 1 }
            return queue[queueIndex]
        }
        if !heapDone {
            // The first request takes as many as the target says at once (one sort instead of a walk per file).
            let wanted = queue.isEmpty ? min(expectedVictims, goal.limit ?? .max) : 1
            queue = cursor.next(atLeast: max(1, wanted), in: ledger)
            queueIndex = 0
            if !queue.isEmpty { return nextCandidate(ledger) }
            heapDone = true
        }
        let takesInUse = goal.target != .everything && !isAgeDriven && !sparesInUse
        return takesInUse && !inUse.isEmpty ? inUse.removeFirst() : nil
    }

    private var isAgeDriven: Bool { if case .olderThan = goal.target { return true } else { return false } }

    /// Deletes the next victim. Returns false when the target is met, the pass's limit is reached, or no candidate
    /// is left.
    mutating func evictNext(_ ledger: SizeLedger, _ events: inout EventOutbox) -> Bool {
        while !lockLost, let (r, age) = nextCandidate(ledger) {
            // Gone already in this trim: with its unit, or as the largest file (`evictOversize`).
            if pending.contains(r) { continue }
            guard wants(age: age) else { return false }
            if let limit = goal.limit, removed >= limit { paced = true; return false }
            if let reason = spareReason(r, age: age, ledger) {
                spared.count(reason)
                continue
            }
            if !heapDone && goal.target != .everything && isInUse(r, ledger) {
                inUse.append((r, age))
                continue
            }
            if evict(r, reason: goal.reason, ledger, &events) { return true }
        }
        return false
    }

    /// Evicts until the target is met (a trim of one root).
    mutating func evictOldestFirst(_ ledger: SizeLedger, _ events: inout EventOutbox) {
        if goal.reason == .quota, case .total(let target) = goal.target,
            !evictOversize(target: target, ledger, &events)
        {
            return
        }
        while evictNext(ledger, &events) {}
    }

    func isInUse(_ r: RecordID, _ ledger: SizeLedger) -> Bool {
        ledger.inode(ofRecord: r)?.writing == true || (runtime.settings.spareOpen && ledger.isOpen(r))
    }

    /// Why `r` must stay, if it must. A `CACHEDIR.TAG` always stays — except inside an eviction unit, which goes
    /// whole with the tag of its own (a uvx environment in uv's `archive-v0/<id>/` carries one).
    mutating func spareReason(_ r: RecordID, age: Int64, _ ledger: SizeLedger, insideUnit: Bool = false)
        -> SpareReason?
    {
        if !insideUnit && ledger.withName(ofRecord: r, { $0.elementsEqual("CACHEDIR.TAG".utf8) }) {
            return .protected
        }
        if !runtime.protect.isEmpty && runtime.protect.matches(relativePath(r, ledger)) { return .protected }
        if let youngAfter, age > youngAfter { return .young }
        if isAgeDriven && isInUse(r, ledger) { return .inUse }
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
    private mutating func evictOversize(target: Int64, _ ledger: SizeLedger, _ events: inout EventOutbox) -> Bool {
        guard let account = ledger.account(root), account.largestSeen > target else { return true }
        for _ in 0..<8 where projected > target {
            var largest: (record: RecordID, bytes: Int64)?
            var anySmaller = false
            ledger.forEachRecord(under: account.rootNode) { r in
                guard !pending.contains(r), let inode = ledger.inode(ofRecord: r),
                    pending.remainingNames(ofRecord: r, in: ledger) == 1
                else { return }
                if inode.bytes <= target {
                    anySmaller = true
                } else if inode.bytes > (largest?.bytes ?? 0) {
                    largest = (r, inode.bytes)
                }
            }
            guard anySmaller, let (r, _) = largest else { return true }
            let age = ledger.victimAge(r)
            switch spareReason(r, age: age, ledger) {
            case nil where isInUse(r, ledger):
                spared.inUse += 1
                held = true
                return false
            case .protected where age > fileTime - Self.holdWindow:
                spared.protected += 1
                held = true
                return false
            case nil:
                // Gone, it is passed over when the walk through the victims comes to it; kept, it is a candidate
                // again there.
                guard evict(r, reason: .oversize, ledger, &events) else { return true }
            default:
                return true
            }
        }
        return true
    }

    /// How long a protected file larger than the target holds a trim after it was written (nanoseconds).
    static let holdWindow: Int64 = 2_000_000_000

    /// Deletes one victim (if the veto hook agrees); returns whether it counts as evicted.
    private mutating func evict(
        _ r: RecordID, reason: TrimReason, _ ledger: SizeLedger, _ events: inout EventOutbox
    ) -> Bool {
        let rel = displayPath(r, ledger)
        // What this deletion frees: a file with another name left here frees nothing yet.
        let size = pending.freedBytes(ofRecord: r, in: ledger)
        if let veto = runtime.settings.shouldEvict,
            !veto(EvictionCandidate(directory: runtime.name, file: rel, size: size, reason: reason))
        {
            spared.vetoed += 1
            return false
        }
        let outcome = deleter.delete(r, in: ledger, checkingAge: goal.target != .everything)
        switch outcome {
        case .removed, .simulated:
            pending.removeFile(r, in: ledger)
        case .vanished:
            // Renamed (or deleted) by someone else since it was counted: not ours. The changes that say where it
            // went are queued and will file it there; the next candidate takes its place.
            return false
        case .changed:
            // Not the file we counted (replaced, rewritten, or a symlink on the way): leave it; it is statted again.
            changed.append(r)
            return false
        case .failed(let errno):
            events.error("cannot delete: \(errno)", dir: runtime.name, file: rel, kind: "delete")
            return false
        case .lockLost, .lockHeld, .lockUnusable:
            noteLockRefusal(outcome)
            return false
        }
        removed += 1
        events.emit(.evict(Eviction(dir: runtime.name, file: rel, size: size, reason: reason, dryRun: dryRun)))
        progress?(removed, before - projected, &events)
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

    /// Releases the deleter and emits the `trim` report.
    mutating func finish(_ events: inout EventOutbox) -> TrimReport {
        queue.removeAll()
        inUse.removeAll()
        if let trouble = deleter.trashTrouble {
            events.error(
                "a file moved into \(TrashFolder.name) and kept could not be put back (\(trouble)); "
                    + "it stays there and goes at the next start",
                dir: runtime.name, kind: "trash")
        }
        renameRefused = renameRefused ?? deleter.renameRefused
        leftInTrash = deleter.leftInTrash
        deleter.finish()
        let after = projected
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
        events.emit(.trim(report))
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
