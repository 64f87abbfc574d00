/// Free-space checks on each registered directory's filesystem, after changes (at most once a second) and on a
/// timer (`low_disk_interval`). One `low_disk` line per crossing; re-armed only when free space is back above
/// the threshold plus a margin (a tenth of it), so a disk hovering at the threshold does not spam. With
/// `low_disk_action = trim` the directories on that filesystem are trimmed, the one furthest over its own target
/// first, until free space is back above the threshold and the margin. Directories with `delete_rate` purge at
/// most that many files a pass, a pass a second, until free space is back. A failing `statvfs` is an `error`
/// line, never "plenty free".
struct LowDiskPolicy: CleaningPolicy {
    private struct FilesystemState {
        var armed = true
        var lastFree: Int64?
        /// Uptime nanoseconds: a rate must not jump with the wall clock.
        var lastTime: UInt64?
    }

    let timerInterval: Int64?
    private var filesystems: [UInt64: FilesystemState] = [:]
    private var lastCheck: UInt64 = 0
    /// Filesystems whose paced purge is still going.
    private var purging = Set<UInt64>()

    init?(_ settings: WardenSettings) {
        guard settings.lowDiskFree != nil || settings.directories.contains(where: { $0.lowDiskFree != nil }) else { return nil }
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
        for rt in state.roots.all where !rt.lost {
            guard let account = state.ledger.account(rt.id) else { continue }
            byDevice[account.dev, default: []].append(rt.id)
        }
        for (dev, ids) in byDevice.sorted(by: { $0.key < $1.key }) {
            check(dev, ids, now: now, state: state, into: &decision)
        }
        return decision
    }

    private mutating func check(_ dev: UInt64, _ ids: [RootID], now: UInt64, state: PipelineState, into decision: inout PolicyDecision) {
        guard let first = state.roots[ids[0]] else { return }
        let space: FreeSpace
        do { space = try state.disk.freeSpace(of: first.path) } catch {
            decision.events.append(.error(WardenIssue(message: "statvfs failed: \(error); free space unknown", dir: first.name, kind: "statvfs")))
            return
        }
        // The strictest threshold among the directories on this filesystem.
        let threshold = ids.compactMap { (state.roots[$0]?.settings.lowDiskFree ?? state.settings.lowDiskFree)?.bytes(ofFilesystemSize: space.size) }.max() ?? 0
        var fs = filesystems[dev] ?? FilesystemState()
        var rate: Double?
        if let lf = fs.lastFree, let lt = fs.lastTime, now > lt { rate = Double(lf - space.free) / (Double(now - lt) / 1e9) }
        fs.lastFree = space.free
        fs.lastTime = now
        defer { filesystems[dev] = fs }
        let enough = threshold + threshold / 10
        if space.free > enough {
            fs.armed = true
            purging.remove(dev)
        }
        if space.free < threshold && fs.armed {
            fs.armed = false
            decision.events.append(.lowDisk(LowDiskReport(
                mount: FreeSpace.mountPoint(of: first.path), free: space.free, size: space.size, threshold: threshold,
                dirs: ids.compactMap { state.roots[$0]?.name }, bytesPerSecond: rate,
                secondsToFull: rate.flatMap { $0 > 0 ? Double(space.free) / $0 : nil })))
            if state.settings.lowDiskAction == .trim { purging.insert(dev) }
        }
        guard purging.contains(dev), space.free <= enough else { return }
        let ordered = ids.sorted { Self.over($0, state) > Self.over($1, state) }
        decision.goals.append(EvictionGoal(reason: .lowDisk, roots: ordered, target: .free(enough - space.free), tag: dev))
    }

    /// A purge pass that did not stop at a `delete_rate` budget freed all it could: the purge is over until the
    /// next crossing. A paced one goes on (the engine consults this policy again a second later).
    mutating func outcome(_ goal: EvictionGoal, _ reports: [TrimReport]) {
        if !reports.contains(where: \.paced) { purging.remove(goal.tag) }
    }

    /// How far a root is above its own trim target (its total when it has no quota).
    private static func over(_ id: RootID, _ state: PipelineState) -> Int64 {
        let total = state.ledger.total(id)
        let quota = state.roots[id]?.settings.quota ?? 0
        return quota > 0 ? total - quota / 2 : total
    }
}
