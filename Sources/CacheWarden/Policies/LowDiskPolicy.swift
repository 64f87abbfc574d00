import CacheWardenLedger

/// Free-space checks on each registered directory's filesystem, after changes (at most once a second) and on a
/// timer (`low_disk_interval`). One `low_disk` line per crossing of the low watermark (`low_disk_free`); re-armed
/// only when free space is back above it plus a margin (a tenth of it), so a disk hovering at the threshold does
/// not spam. With `low_disk_action = trim` the directories on that filesystem are trimmed, the one furthest over
/// its own target first, until free space is back at the high watermark (`low_disk_target`, at least the margin)
/// or nothing purgeable is left. Directories with `delete_rate` purge at most that many files a pass, a pass a
/// second, until free space is back. A failing `statvfs` is an `error` line, never "plenty free". Each directory's
/// rules hold in a purge as in its own trims (`evict_unit`, `protect`, `min_age`, open files); one waiting for
/// `trim_after_idle` gives only when the others cannot bring free space back to the low watermark (`Evictor.free`).
struct LowDiskPolicy: CleaningPolicy {
    private struct FilesystemState {
        var armed = true
        var lastFree: Int64?
        /// Uptime nanoseconds: a rate must not jump with the wall clock.
        var lastTime: UInt64?
        /// Free space when the purge's last pass was asked for: a pass must gain on it for the purge to go on.
        var passFree: Int64?
    }

    let timerInterval: Int64?
    private var filesystems: [UInt64: FilesystemState] = [:]
    private var lastCheck: UInt64 = 0
    /// Filesystems whose paced purge is still going.
    private var purging = Set<UInt64>()

    init?(_ settings: WardenSettings) {
        guard settings.lowDiskFree != nil || settings.directories.contains(where: { $0.lowDiskFree != nil }) else {
            return nil
        }
        timerInterval = max(1, settings.lowDiskInterval)
    }

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool {
        settings.lowDiskAction == .trim && (dir.lowDiskFree ?? settings.lowDiskFree) != nil
    }

    mutating func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        let now = state.clock.uptimeNanoseconds
        if trigger == .changes && now - lastCheck < 1_000_000_000 && purging.isEmpty { return PolicyDecision() }
        lastCheck = now
        var decision = PolicyDecision()
        var byDevice: [UInt64: [RootID]] = [:]
        for rt in state.roots.all where rt.lost == nil {
            guard let account = state.ledger.account(rt.id) else { continue }
            byDevice[account.dev, default: []].append(rt.id)
        }
        for (dev, ids) in byDevice.sorted(by: { $0.key < $1.key }) {
            check(dev, ids, now: now, state: state, into: &decision)
        }
        return decision
    }

    private mutating func check(
        _ dev: UInt64, _ ids: [RootID], now: UInt64, state: PipelineState, into decision: inout PolicyDecision
    ) {
        guard let first = state.roots[ids[0]] else { return }
        let space: FreeSpace
        do { space = try state.disk.freeSpace(of: first.path) } catch {
            decision.events.append(
                .error(
                    WardenIssue(
                        message: "statvfs failed: \(error); free space unknown", dir: first.name, kind: "statvfs")))
            return
        }
        guard let marks = FreeSpaceWatermarks.of(ids, size: space.size, state) else { return }
        var fs = filesystems[dev] ?? FilesystemState()
        var rate: Double?
        if let lf = fs.lastFree, let lt = fs.lastTime, now > lt {
            rate = Double(lf - space.free) / (Double(now - lt) / 1e9)
        }
        fs.lastFree = space.free
        fs.lastTime = now
        defer { filesystems[dev] = fs }
        if space.free > marks.rearm { fs.armed = true }
        if space.free >= marks.high { purging.remove(dev) }
        if space.free < marks.low && fs.armed {
            fs.armed = false
            decision.events.append(
                .lowDisk(
                    LowDiskReport(
                        mount: FreeSpace.mountPoint(of: first.path), free: space.free, size: space.size,
                        threshold: marks.low,
                        dirs: ids.compactMap { state.roots[$0]?.name }, bytesPerSecond: rate,
                        secondsToFull: rate.flatMap { $0 > 0 ? Double(space.free) / $0 : nil })))
            if state.settings.lowDiskAction == .trim { purging.insert(dev) }
            fs.passFree = nil
        }
        guard purging.contains(dev), space.free < marks.high else { return }
        // Deletions that gave no space back (files still open elsewhere, a writer outpacing the purge): stop
        // rather than empty the cache for nothing.
        if let last = fs.passFree, space.free <= last {
            purging.remove(dev)
            return
        }
        fs.passFree = space.free
        let ordered = ids.sorted { Self.over($0, state) > Self.over($1, state) }
        var goal = EvictionGoal(reason: .lowDisk, roots: ordered, target: .free(marks.high - space.free), tag: dev)
        goal.watermarks = marks
        IdleWait.markWaiting(ordered, in: &goal, &decision, state)
        decision.goals.append(goal)
    }

    /// A pass that found nothing purgeable left (a root short of its target, or nothing removed) ends the purge
    /// until the next crossing. Otherwise the purge goes on: the next check measures free space again and asks
    /// for the rest if it is still below the high watermark (a paced pass, deletions that freed less on disk than
    /// counted, files written meanwhile or not yet seen). A pass that freed less than it asked for while roots
    /// waited for idle found nothing more it may take now either: the purge ends (the wait holds until the next
    /// crossing, when the part below the low watermark is taken from them if need be).
    mutating func outcome(_ goal: EvictionGoal, _ reports: [TrimReport]) {
        if reports.contains(where: \.paced) { return }
        if reports.allSatisfy({ $0.removed == 0 }) || reports.contains(where: { $0.shortBy > 0 }) {
            purging.remove(goal.tag)
        }
        if !goal.cannotGive.isEmpty, case .free(let bytes) = goal.target, reports.reduce(0, { $0 + $1.freed }) < bytes {
            purging.remove(goal.tag)
        }
    }

    /// How far a root is above its own trim target (its total when it has no quota).
    private static func over(_ id: RootID, _ state: PipelineState) -> Int64 {
        let total = state.ledger.total(id)
        let quota = state.roots[id]?.settings.quota ?? 0
        return quota > 0 ? total - quota / 2 : total
    }
}

extension LowDiskPolicy {
    /// A pass whose roots waited for their client's lock deleted nothing there: the next pass is not judged by
    /// this one's gain (which would end the purge), it is simply tried again.
    mutating func deferred(_ goal: EvictionGoal) { filesystems[goal.tag]?.passFree = nil }
}

/// The free-space watermarks of one filesystem: a low-disk purge starts below `low` and goes on until `high` is
/// free (or nothing purgeable is left).
struct FreeSpaceWatermarks: Equatable, Sendable {
    /// The strictest `low_disk_free` of the directories on the filesystem, in bytes.
    var low: Int64
    /// The highest `low_disk_target` among them (each defaulting to its `low_disk_free`), at least `rearm`.
    var high: Int64

    /// Free space above this re-arms the `low_disk` line: a tenth above `low`.
    var rearm: Int64 { low + low / 10 }

    /// The watermarks of the directories `ids` on a filesystem of `size` bytes (nil when none has a threshold).
    static func of(_ ids: [RootID], size: Int64, _ state: PipelineState) -> FreeSpaceWatermarks? {
        var low: Int64?
        var high: Int64 = 0
        for id in ids {
            guard let dir = state.roots[id]?.settings, let free = dir.lowDiskFree ?? state.settings.lowDiskFree else {
                continue
            }
            let bytes = free.bytes(ofFilesystemSize: size)
            low = max(low ?? 0, bytes)
            high = max(
                high, (dir.lowDiskTarget ?? state.settings.lowDiskTarget)?.bytes(ofFilesystemSize: size) ?? bytes)
        }
        guard let low else { return nil }
        return FreeSpaceWatermarks(low: low, high: max(high, low + low / 10))
    }
}
