import Dispatch
import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Free-space watermarks (`low_disk_target`): a purge starts below `low_disk_free` and goes on to the target or
/// until nothing purgeable is left. On the scripted 4 MiB filesystem of `LowDiskTests` (threshold 50 % = 2 MiB,
/// margin 2.2 MiB) and on a small real tmpfs.
@Suite(.serialized) struct LowDiskWatermarkTests {
    static let size = LowDiskTests.size
    static let mib: Int64 = 1024 * 1024

    /// Eight 300 kB files, oldest first (`old0`…`old7`): 2.4 MB used, 1.79 MB free of 4 MiB.
    static func filledTree() -> TemporaryTree {
        let tree = TemporaryTree()
        for i in 0..<8 { tree.write("old\(i)", size: 300_000, mtime: Double(1_000_000 + i)) }
        return tree
    }

    static func watcher(
        _ dirs: [DirectorySettings], _ clock: ManualClock, _ disk: ScriptedDiskProbe, _ log: EventLog,
        target: SizeLimit?
    ) throws -> Watcher {
        var settings = WardenSettings(
            directories: dirs, sizeBasis: .apparent, lowDiskFree: .percent(50),
            lowDiskAction: .trim, lowDiskInterval: 1)
        settings.lowDiskTarget = target
        try settings.validate()
        let watcher = Watcher(settings: settings, clock: clock, disk: disk, log: log)
        try watcher.start()
        return watcher
    }

    static func lowDiskTrims(_ log: EventLog) -> [TrimReport] { log.trims.filter { $0.reason == .lowDisk } }

    @Test func theTargetIsParsedAndChecked() throws {
        let tree = TemporaryTree()
        tree.mkdir("d")
        func parse(_ text: String) throws(ConfigError) -> WardenSettings {
            try WardenSettings.parse("dir.a.path = d\n" + text, source: "t.conf", relativeTo: tree.path)
        }
        func error(_ text: String) -> String {
            do { _ = try parse(text); return "no error" } catch { return error.description }
        }
        let s = try parse("low_disk_free = 10%\nlow_disk_target = 25%\ndir.a.low_disk_target = 40GB\n")
        #expect(s.lowDiskTarget == .percent(25) && s.directories[0].lowDiskTarget == .bytes(40_000_000_000))
        #expect(try parse("low_disk_free = 10%\n").lowDiskTarget == nil, "the default is low_disk_free")
        #expect(try parse("low_disk_free = 10%\nlow_disk_target = 10%\n").lowDiskTarget == .percent(10))
        #expect(
            try parse("low_disk_free = 10%\nlow_disk_target = 1GB\n").lowDiskTarget == .bytes(1_000_000_000),
            "a share against a size is settled at run time")
        #expect(
            error("low_disk_free = 10%\nlow_disk_target = 5%\n")
                == "t.conf:3: low_disk_target (5%) is below low_disk_free (10%); expected the target at or above the threshold: a purge stops there"
        )
        #expect(
            error("low_disk_free = 10GB\n\ndir.a.low_disk_target = 5GB\n")
                == "t.conf:4: low_disk_target (5000000000B) is below low_disk_free (10000000000B) for dir.a (dir.a.low_disk_target); expected the target at or above the threshold: a purge stops there"
        )
        #expect(
            error("low_disk_free = 10%\nlow_disk_target = 20%\ndir.a.low_disk_free = 30%\n").hasPrefix(
                "t.conf:4: low_disk_target (20%) is below low_disk_free (30%) for dir.a (dir.a.low_disk_free)"))
        #expect(
            error("low_disk_target = 20%\n").hasPrefix(
                "t.conf:2: low_disk_target says where a low-disk purge stops, but no low_disk_free"))
        #expect(error("dir.a.low_disk_target = 20%\n").hasPrefix("t.conf:2: dir.a.low_disk_target says where"))
        #expect(
            error("low_disk_free = 10%\nlow_disk_target = 100%\n").hasPrefix(
                "t.conf:3: bad value `100%` for low_disk_target"))
    }

    @Test func withoutATargetThePurgeStopsAtTheMarginAsBefore() throws {
        let tree = Self.filledTree()
        let clock = ManualClock(), disk = LowDiskTests.filesystem(holding: tree), log = EventLog()
        let watcher = try Self.watcher([DirectorySettings(name: "t", path: tree.path)], clock, disk, log, target: nil)
        defer { watcher.stop() }
        #expect(log.evictions.map(\.file) == ["old0", "old1"])
        let trim = try #require(Self.lowDiskTrims(log).first)
        #expect(trim.lowWatermark == 2 * Self.mib && trim.highWatermark == 2 * Self.mib + 2 * Self.mib / 10)
        let line =
            try JSONSerialization.jsonObject(with: Data(WardenEvent(.trim(trim)).jsonLine().utf8)) as! [String: Any]
        #expect((line["low_watermark"] as? NSNumber)?.int64Value == 2 * Self.mib)
        #expect((line["high_watermark"] as? NSNumber)?.int64Value == trim.highWatermark)
        let status = try #require(watcher.status().first)
        #expect(status.lowWatermark == trim.lowWatermark && status.highWatermark == trim.highWatermark)
    }

    @Test func aPurgeGoesFromBelowTheLowWatermarkToTheHighOne() throws {
        let tree = Self.filledTree()
        let clock = ManualClock(), disk = LowDiskTests.filesystem(holding: tree), log = EventLog()
        let watcher = try Self.watcher(
            [DirectorySettings(name: "t", path: tree.path)], clock, disk, log, target: .percent(75))
        defer { watcher.stop() }
        // 3 MiB free needs at most 1 MiB used: three files of 300 kB stay.
        #expect(log.evictions.map(\.file) == ["old0", "old1", "old2", "old3", "old4"])
        #expect(try disk.freeSpace(of: tree.path).free >= 3 * Self.mib)
        let trim = try #require(Self.lowDiskTrims(log).first)
        #expect(trim.lowWatermark == 2 * Self.mib && trim.highWatermark == 3 * Self.mib && trim.shortBy == 0)
        clock.advance(by: 5)
        #expect(log.evictions.count == 5 && log.lowDisks.count == 1)
        // Between the watermarks: left alone; below the low one again (re-armed at 3.29 MB free): a new purge.
        tree.write("new0", size: 600_000) // 1.5 MB used: 2.69 MB free, between 2 MiB and 3 MiB
        clock.advance(by: 2)
        #expect(log.evictions.count == 5 && log.lowDisks.count == 1, "a disk between the watermarks is not purged")
        tree.write("new1", size: 700_000) // 2.2 MB used: 1.99 MB free, below 2 MiB
        #expect(eventually { log.writes.map(\.file) == ["new0", "new1"] })
        clock.advance(by: 1)
        #expect(log.lowDisks.count == 2)
        #expect(try disk.freeSpace(of: tree.path).free >= 3 * Self.mib)
        #expect(Self.lowDiskTrims(log).count == 2 && !tree.exists("old5"))
    }

    @Test func aPurgeStopsWhenNothingPurgeableIsLeft() throws {
        let tree = TemporaryTree()
        for i in 0..<6 { tree.write("keep\(i)", size: 300_000, mtime: Double(1_000_000 + i)) }
        for i in 0..<2 { tree.write("old\(i)", size: 300_000, mtime: Double(2_000_000 + i)) }
        let clock = ManualClock(), disk = LowDiskTests.filesystem(holding: tree), log = EventLog()
        let dir = DirectorySettings(name: "t", path: tree.path, protect: ["keep*"])
        let watcher = try Self.watcher([dir], clock, disk, log, target: .percent(75))
        defer { watcher.stop() }
        // 1.8 MB protected: 3 MiB free cannot be reached; the two others go and the purge ends short.
        #expect(Set(log.evictions.map(\.file)) == ["old0", "old1"])
        let trim = try #require(Self.lowDiskTrims(log).first)
        #expect(trim.shortBy > 0 && trim.spared?.protected == 6, "\(trim)")
        clock.advance(by: 5)
        #expect(Self.lowDiskTrims(log).count == 1 && log.lowDisks.count == 1, "the purge went on with nothing to take")
    }

    @Test func deletionsThatGiveNoSpaceBackEndThePurge() throws {
        let tree = Self.filledTree()
        // Free space stays at 1.5 MiB whatever is deleted (the files are held open elsewhere, say).
        let clock = ManualClock(), disk = ScriptedDiskProbe(free: 3 * Self.mib / 2, size: Self.size), log = EventLog()
        let watcher = try Self.watcher(
            [DirectorySettings(name: "t", path: tree.path)], clock, disk, log, target: .percent(75))
        defer { watcher.stop() }
        #expect(log.evictions.count == 6, "one pass frees the 1.5 MiB asked for")
        clock.advance(by: 5)
        #expect(
            log.evictions.count == 6 && Self.lowDiskTrims(log).count == 1,
            "a pass that gained nothing was followed by another")
    }

    @Test func theHighestTargetOnAFilesystemApplies() throws {
        let a = TemporaryTree(), b = TemporaryTree()
        let clock = ManualClock(), disk = ScriptedDiskProbe(free: Self.size, size: Self.size), log = EventLog()
        var dirA = DirectorySettings(name: "a", path: a.path)
        dirA.lowDiskTarget = .percent(60)
        let watcher = try Self.watcher(
            [dirA, DirectorySettings(name: "b", path: b.path)], clock, disk, log, target: nil)
        defer { watcher.stop() }
        let marks = watcher.status().map { [$0.lowWatermark, $0.highWatermark] }
        let high = SizeLimit.percent(60).bytes(ofFilesystemSize: Self.size)
        #expect(marks == [[2 * Self.mib, high], [2 * Self.mib, high]], "\(marks)")
    }

    /// The real thing: an 8 MiB tmpfs filled to 16 % free, a watcher on the real clock and `statvfs`, free space
    /// below 25 % purged up to 60 %.
    @Test(.enabled(if: mountUnavailable == nil, "needs root and the right to mount a tmpfs"))
    func aRealTmpfsIsPurgedUpToItsTarget() throws {
        let fs = try LowDiskTests.mountSmallTmpfs(size: "8m")
        defer { LowDiskTests.unmount(fs) }
        for i in 0..<14 { fs.write("f\(String(format: "%02d", i))", size: 500_000, mtime: Double(1_000_000 + i)) }
        let probe = SystemDiskProbe()
        let before = try probe.freeSpace(of: fs.path)
        let low = SizeLimit.percent(25).bytes(ofFilesystemSize: before.size)
        let high = SizeLimit.percent(60).bytes(ofFilesystemSize: before.size)
        #expect(before.free < low, "the fill did not go below the threshold: \(before)")
        var settings = WardenSettings(
            directories: [DirectorySettings(name: "t", path: fs.path)], lowDiskFree: .percent(25),
            lowDiskAction: .trim, lowDiskInterval: 1)
        settings.lowDiskTarget = .percent(60)
        let log = EventLog()
        let started = DispatchTime.now().uptimeNanoseconds
        let watcher = Watcher(settings: settings) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        #expect(eventually { (try? probe.freeSpace(of: fs.path).free).map { $0 >= high } == true })
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(eventually { Self.lowDiskTrims(log).count == 1 })
        let after = try probe.freeSpace(of: fs.path)
        let evicted = log.evictions
        // Real deletions, oldest first, no more than needed: the files left are the newest and one more would
        // have kept free space below the target.
        #expect(!evicted.isEmpty && evicted.allSatisfy { $0.reason == .lowDisk && !fs.exists($0.file) })
        #expect(evicted.map(\.file) == (0..<evicted.count).map { "f" + String(format: "%02d", $0) })
        #expect(
            after.free - evicted.map(\.size).reduce(0, +) >= before.free - 4096, "freed less than the evict lines say")
        #expect(after.free - (evicted.last?.size ?? 0) < high, "one eviction too many")
        let trim = try #require(Self.lowDiskTrims(log).first)
        #expect(trim.lowWatermark == low && trim.highWatermark == high && trim.shortBy == 0)
        print(
            "tmpfs \(before.size) B: free \(before.free) → \(after.free) B (low \(low), target \(high)), "
                + "\(evicted.count) files evicted in \(String(format: "%.3f", seconds)) s")
    }
}
