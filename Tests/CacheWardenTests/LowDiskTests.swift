import Foundation
import Glibc
import SystemPackage
import Testing
@testable import CacheWarden

/// Low-disk warnings and purges: on a scripted filesystem and a manual clock, plus one end-to-end check of
/// `statvfs` on a small real tmpfs (needs root and mount; reported as skipped otherwise).
@Suite(.serialized) struct LowDiskTests {
    /// The scripted filesystem's size; at `low_disk_free = 50%` the threshold is 2 MiB and the margin ends at 2.2 MiB.
    static let size: Int64 = 4 * 1024 * 1024

    /// Mounts a tmpfs of `size` (4 MiB) on a fresh folder (tests enabled where `mountUnavailable` is nil).
    static func mountSmallTmpfs(size: String = "4m") throws -> TemporaryTree {
        let tree = TemporaryTree("cw-tmpfs")
        let r = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", tree.path])
        guard r.status == 0 else { throw ParseFailure(message: "cannot mount a tmpfs: \(r.err)") }
        return tree
    }

    static func unmount(_ tree: TemporaryTree) { _ = try? runProcess("/bin/umount", ["-l", tree.path]) }

    /// A filesystem of `size` bytes holding only `tree`: free space is what the tree's files leave.
    static func filesystem(holding tree: TemporaryTree) -> ScriptedDiskProbe {
        let path = tree.path
        return ScriptedDiskProbe { _ in
            .success(FreeSpace(free: size - diskTotals(path, basis: .apparent).total, size: size))
        }
    }

    static func watcher(
        _ tree: TemporaryTree, _ clock: ManualClock, _ disk: ScriptedDiskProbe, _ log: EventLog,
        action: LowDiskAction = .warn, interval: Int64, deleteRate: Int? = nil
    ) throws -> Watcher {
        var dir = DirectorySettings(name: "t", path: tree.path)
        dir.deleteRate = deleteRate
        let settings = WardenSettings(
            directories: [dir], sizeBasis: .apparent, lowDiskFree: .percent(50),
            lowDiskAction: action, lowDiskInterval: interval)
        let watcher = Watcher(settings: settings, clock: clock, disk: disk, log: log)
        try watcher.start()
        return watcher
    }

    @Test(.enabled(if: mountUnavailable == nil, "needs root and the right to mount a tmpfs"))
    func aRealTmpfsBelowTheThresholdIsReportedWithItsMountPoint() throws {
        let fs = try Self.mountSmallTmpfs()
        defer { Self.unmount(fs) }
        fs.write("big1", size: 2_500_000) // free < 50 % of 4 MiB
        let log = EventLog()
        let watcher = Watcher(
            settings: WardenSettings(
                directories: [DirectorySettings(name: "t", path: fs.path)], lowDiskFree: .percent(50),
                lowDiskInterval: 1)
        ) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        #expect(eventually { log.lowDisks.count == 1 })
        let first = try #require(log.lowDisks.first)
        #expect(first.dirs == ["t"])
        #expect(first.free < first.threshold)
        #expect(first.size == Self.size)
        let line =
            try JSONSerialization.jsonObject(with: Data(WardenEvent(.lowDisk(first)).jsonLine().utf8)) as! [String: Any]
        #expect(line["mount"] as? String == fs.path)
    }

    @Test func lowDiskIsReportedOncePerCrossingAndReArmedAboveTheMargin() throws {
        let tree = TemporaryTree()
        let clock = ManualClock(), disk = ScriptedDiskProbe(free: Self.size, size: Self.size), log = EventLog()
        // Timer checks once a minute: between them only changes look, at most once a second.
        let watcher = try Self.watcher(tree, clock, disk, log, interval: 60)
        defer { watcher.stop() }
        func set(free: Int64) { disk.set(free: free, size: Self.size) }
        let below = Self.size - 2_500_000
        // 2.5 MB gone in a second: the next change, a second after the startup check, sees the crossing.
        set(free: below)
        clock.advance(by: 1)
        tree.write("big1", size: 10)
        #expect(eventually { log.lowDisks.count == 1 })
        let first = try #require(log.lowDisks.first)
        #expect(first.dirs == ["t"])
        #expect(first.free < first.threshold && first.threshold == Self.size / 2)
        #expect(first.size == Self.size)
        #expect(first.bytesPerSecond == 2_500_000 && first.secondsToFull == Double(below) / 2_500_000, "\(first)")
        // Hovering below the threshold: a change within the second does not look again, timer ticks do; no second line.
        let looked = disk.lookups
        set(free: below - 10_000)
        tree.write("small", size: 10)
        #expect(eventually { log.writes.contains { $0.file == "small" } })
        #expect(disk.lookups == looked)
        clock.advance(by: 120)
        #expect(disk.lookups == looked + 2)
        #expect(log.lowDisks.count == 1)
        // Above the threshold but within the margin, then below: still one line.
        set(free: Self.size / 2 + Self.size / 40)
        clock.advance(by: 60)
        set(free: below)
        clock.advance(by: 60)
        #expect(log.lowDisks.count == 1)
        // Back above threshold + margin, then below again: a second line.
        set(free: Self.size)
        clock.advance(by: 60)
        set(free: below)
        clock.advance(by: 60)
        #expect(log.lowDisks.count == 2)
        let line =
            try JSONSerialization.jsonObject(with: Data(WardenEvent(.lowDisk(first)).jsonLine().utf8)) as! [String: Any]
        #expect(line["mount"] as? String == FreeSpace.mountPoint(of: tree.path))
    }

    @Test func lowDiskTrimPurgesOldestFirstUntilFreeSpaceIsBack() throws {
        let tree = TemporaryTree()
        for i in 0..<8 { tree.write("old\(i)", size: 300_000, mtime: Double(1_000_000 + i)) } // 2.4 MB: 1.8 MB free
        let clock = ManualClock(), disk = Self.filesystem(holding: tree), log = EventLog()
        let watcher = try Self.watcher(tree, clock, disk, log, action: .trim, interval: 1)
        defer { watcher.stop() }
        // Up to 2.2 MiB free takes the two oldest files, at startup.
        #expect(log.trims.filter { $0.reason == .lowDisk }.count == 1)
        #expect(log.evictions.map(\.file) == ["old0", "old1"])
        #expect(!tree.exists("old0") && tree.exists("old2") && tree.exists("old7"))
        #expect(try disk.freeSpace(of: tree.path).free > 2 * 1024 * 1024)
        clock.advance(by: 5) // timer checks: free space is back, nothing more goes
        #expect(log.evictions.count == 2)
    }

    @Test func aPacedLowDiskPurgeTakesAPassASecond() throws {
        let tree = TemporaryTree()
        for i in 0..<8 { tree.write("old\(i)", size: 300_000, mtime: Double(1_000_000 + i)) }
        let clock = ManualClock(), disk = Self.filesystem(holding: tree), log = EventLog()
        let watcher = try Self.watcher(tree, clock, disk, log, action: .trim, interval: 60, deleteRate: 1)
        defer { watcher.stop() }
        func passes() -> [TrimReport] { log.trims.filter { $0.reason == .lowDisk } }
        #expect(passes().map(\.removed) == [1] && passes()[0].paced)
        clock.advance(by: 0.999)
        #expect(passes().count == 1, "a pass came before its second")
        clock.advance(by: 0.001)
        #expect(passes().map(\.removed) == [1, 1] && passes()[1].paced == false)
        #expect(log.evictions.map(\.file) == ["old0", "old1"])
        clock.advance(by: 5)
        #expect(passes().count == 2, "a pass after free space was back")
    }

    @Test func aFailingStatvfsIsAnErrorNotPlentyFree() throws {
        let tree = TemporaryTree()
        let clock = ManualClock(), disk = ScriptedDiskProbe(free: Self.size, size: Self.size), log = EventLog()
        let watcher = try Self.watcher(tree, clock, disk, log, interval: 1)
        defer { watcher.stop() }
        disk.fail(.ioError)
        clock.advance(by: 1)
        let errors = log.all.compactMap {
            if case .error(let e) = $0.kind { return e }; return nil
        }
        #expect(errors.map(\.kind) == ["statvfs"] && errors.first?.dir == "t", "\(errors)")
        #expect(log.lowDisks.isEmpty)
    }
}
