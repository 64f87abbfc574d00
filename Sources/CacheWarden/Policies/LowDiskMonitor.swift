import Glibc

/// Per-filesystem state of the low-disk check: whether a warning is armed, and the last sample for the fill rate.
struct LowDiskMonitor {
    struct FilesystemState {
        var armed = true
        var lastFree: Int64?
        var lastTime: Int64?
    }
    var filesystems: [UInt64: FilesystemState] = [:]
    var lastCheck: Int64 = 0
}

/// Free-space checks with `statvfs` on each registered directory's filesystem. One `low_disk` line per crossing;
/// re-armed only when free space is back above the threshold plus a margin (a tenth of the threshold), so a disk
/// hovering at the threshold does not spam. A failing `statvfs` is an `error` line, never "plenty free".
extension Engine {
    var lowDiskEnabled: Bool {
        settings.lowDiskFree != nil || rootOrder.contains { roots[$0]?.settings.lowDiskFree != nil }
    }

    func checkLowDisk(force: Bool) {
        guard lowDiskEnabled else { return }
        let now = Engine.nowNanoseconds()
        if !force && now - lowDisk.lastCheck < 1_000_000_000 { return }
        lowDisk.lastCheck = now
        // Group the roots by filesystem (device of the root).
        var byDevice: [UInt64: [Int32]] = [:]
        for id in rootOrder {
            guard let account = ledger.accounts[id], roots[id]?.lost == false else { continue }
            byDevice[account.dev, default: []].append(id)
        }
        for (dev, ids) in byDevice.sorted(by: { $0.key < $1.key }) {
            guard let first = roots[ids[0]] else { continue }
            var vfs = statvfs()
            if statvfs(first.path, &vfs) != 0 {
                emitError("statvfs failed: \(String(cString: strerror(errno))); free space unknown", dir: first.settings.name, kind: "statvfs")
                continue
            }
            let size = Int64(vfs.f_blocks) * Int64(vfs.f_frsize)
            let free = Int64(vfs.f_bavail) * Int64(vfs.f_frsize)
            // The strictest threshold among the directories on this filesystem.
            let threshold = ids.compactMap { (roots[$0]?.settings.lowDiskFree ?? settings.lowDiskFree)?.bytes(ofFilesystemSize: size) }.max() ?? 0
            var state = lowDisk.filesystems[dev] ?? .init()
            var rate: Double?
            if let lf = state.lastFree, let lt = state.lastTime, now > lt {
                rate = Double(lf - free) / (Double(now - lt) / 1e9)
            }
            state.lastFree = free
            state.lastTime = now
            if free < threshold {
                if state.armed {
                    state.armed = false
                    let secondsToFull = rate.flatMap { $0 > 0 ? Double(free) / $0 : nil }
                    emit(.lowDisk(LowDiskReport(mount: Engine.mountPoint(of: first.path), free: free, size: size,
                                                threshold: threshold, dirs: ids.compactMap { roots[$0]?.settings.name },
                                                bytesPerSecond: rate, secondsToFull: secondsToFull)))
                    if settings.lowDiskAction == .trim { purgeForFreeSpace(ids, needed: threshold + threshold / 10 - free) }
                }
            } else if free > threshold + threshold / 10 {
                state.armed = true
            }
            lowDisk.filesystems[dev] = state
        }
    }

    /// Trims the directories of one filesystem, largest share over its own target first, until `needed` bytes
    /// are freed or nothing purgeable is left.
    private func purgeForFreeSpace(_ ids: [Int32], needed: Int64) {
        var remaining = needed
        let ordered = ids.sorted { over($0) > over($1) }
        for id in ordered where remaining > 0 {
            guard let total = ledger.accounts[id]?.total, total > 0 else { continue }
            let report = trim(id, reason: .lowDisk, goal: TrimGoal(target: max(0, total - remaining)))
            remaining -= report?.freed ?? 0
        }
    }

    private func over(_ id: Int32) -> Int64 {
        let total = ledger.accounts[id]?.total ?? 0
        let quota = roots[id]?.settings.quota ?? 0
        return quota > 0 ? total - quota / 2 : total
    }

    /// The mount point holding `path`: the highest ancestor on the same device.
    static func mountPoint(of path: String) -> String {
        var st = stat()
        guard lstat(path, &st) == 0 else { return path }
        var current = path
        while current != "/" {
            let parent = PathResolver.parent(of: current)
            var pst = stat()
            if lstat(parent, &pst) != 0 || pst.st_dev != st.st_dev { break }
            current = parent
        }
        return current
    }
}
