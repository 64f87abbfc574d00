import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// A low-disk purge keeps every directory's rules, as its own quota trim does: whole units with `evict_unit`, no
/// protected, young or open file while anything else is left on the filesystem, and a directory waiting for
/// `trim_after_idle` gives last, only what brings free space back to the low watermark.
@Suite(.serialized) struct LowDiskRulesTests {
    /// The scripted filesystem: 8 MiB; `low_disk_free = 50%` (4 MiB), `low_disk_target = 75%` (6 MiB).
    static let size: Int64 = 8 * 1024 * 1024
    static let low: Int64 = 4 * 1024 * 1024, high: Int64 = 6 * 1024 * 1024

    /// A filesystem of `size` holding `trees` and `filler` bytes of other data (what the test sets).
    final class Filesystem: Sendable {
        let trees: [String]
        private let other = Mutex<Int64>(0)
        init(_ trees: [TemporaryTree]) { self.trees = trees.map(\.path) }

        var filler: Int64 {
            get { other.withLock { $0 } }
            set { other.withLock { $0 = newValue } }
        }

        var free: Int64 {
            LowDiskRulesTests.size - trees.reduce(filler) { $0 + diskTotals($1, basis: .apparent).total }
        }

        var probe: ScriptedDiskProbe {
            ScriptedDiskProbe { [self] _ in .success(FreeSpace(free: free, size: LowDiskRulesTests.size)) }
        }

        /// Fills the disk with other data until `free` bytes are left.
        func leave(free wanted: Int64) { filler += free - wanted }
    }

    static func watcher(_ dirs: [DirectorySettings], _ fs: Filesystem, _ clock: ManualClock, _ log: EventLog) throws
        -> Watcher
    {
        var settings = WardenSettings(
            directories: dirs, sizeBasis: .apparent, lowDiskFree: .percent(50),
            lowDiskAction: .trim, lowDiskInterval: 1)
        settings.lowDiskTarget = .percent(75)
        try settings.validate()
        let watcher = Watcher(settings: settings, clock: clock, disk: fs.probe, log: log)
        try watcher.start()
        return watcher
    }

    @Test func aLowDiskPurgeTakesWholeUnitsOldestFirst() throws {
        let tree = TemporaryTree()
        for k in 0..<8 {
            for part in ["a", "b"] { tree.write("u\(k)/\(part)", size: 200_000, mtime: 1_000_000 + Double(k * 10)) }
        }
        let fs = Filesystem([tree])
        var dir = DirectorySettings(name: "t", path: tree.path)
        dir.evictUnit = .entry
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.watcher([dir], fs, clock, log)
        defer { watcher.stop() }
        fs.leave(free: Self.low - 100_000) // something else filled the disk
        clock.advance(by: 1)
        // Up to 6 MiB free: 2.2 MB more, six whole 400 kB units.
        #expect(log.evictions.map(\.file) == (0..<6).map { "u\($0)" }, "\(log.evictions.map(\.file))")
        #expect(log.evictions.allSatisfy { $0.files == 2 && $0.size == 400_000 && $0.reason == .lowDisk })
        for k in 0..<8 { #expect(tree.exists("u\(k)/a") == tree.exists("u\(k)/b"), "u\(k) half deleted") }
        #expect(fs.free >= Self.high)
    }

    @Test func protectedYoungAndOpenFilesAreSparedAcrossTheFilesystem() throws {
        let (a, sa) = GroupRulesTests.spareable(open: 1_000_000, each: 100_000), b = TemporaryTree()
        for i in 0..<25 { b.write("b\(i)", size: 100_000, mtime: 1_100_000 + Double(i)) }
        let sb = DirectorySettings(name: "b", path: b.path, quota: 10_000_000_000) // far under its quota: purged second
        let fs = Filesystem([a, b])
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.watcher([sa, sb], fs, clock, log)
        defer { watcher.stop() }
        let reader = GroupRulesTests.holdOpen(a, log)
        defer { close(reader) }
        // 2.2 MB to free: a, first, has a1 (and the empty marker) to give, the rest is open, protected (the lock,
        // the tag) or young; b gives the rest (21 files) although its files are newer than the open one.
        fs.leave(free: Self.low - 100_000)
        clock.advance(by: 1)
        let evicted = log.evictions.map { "\($0.dir)/\($0.file)" }
        #expect(
            evicted.prefix(2) == ["a/a1", "a/marker"] && evicted.filter { $0.hasPrefix("b/") }.count == 21, "\(evicted)"
        )
        #expect(
            a.exists("open-old") && a.exists("keep.lock") && a.exists("CACHEDIR.TAG") && a.exists("young"), "\(evicted)"
        )
        #expect(fs.free >= Self.high, "\(fs.free)")
    }

    /// A directory waiting for `trim_after_idle` (busy) and one that is not (other), the busy one furthest over.
    static func busyAndOther(_ clock: ManualClock, _ log: EventLog) throws -> (
        Watcher, Filesystem, TemporaryTree, TemporaryTree
    ) {
        let busy = TemporaryTree(), other = TemporaryTree()
        for i in 0..<25 { busy.write("old\(i)", size: 100_000, mtime: 1_000_000 + Double(i)) } // the oldest files
        for i in 0..<4 { other.write("o\(i)", size: 100_000, mtime: 1_500_000 + Double(i)) }
        var b = DirectorySettings(name: "busy", path: busy.path, quota: 10_000_000_000)
        b.trimAfterIdle = 600
        let fs = Filesystem([busy, other])
        let watcher = try watcher([b, DirectorySettings(name: "other", path: other.path)], fs, clock, log)
        // A write: busy is active from now on (the startup check, a second ago, found the disk fine).
        clock.advance(by: 1)
        busy.write("marker", size: 10)
        #expect(eventually { log.writes.contains { $0.file == "marker" } })
        return (watcher, fs, busy, other)
    }

    @Test func belowTheLowWatermarkAWaitingDirectoryGivesOnlyWhatTheOthersCannot() throws {
        let clock = ManualClock(), log = EventLog()
        let (watcher, fs, busy, other) = try Self.busyAndOther(clock, log) // (each tree lives as long as it is held)
        defer { watcher.stop() }
        fs.leave(free: Self.low - 750_000) // 750 kB below the low watermark; other holds 400 kB
        clock.advance(by: 1)
        // other gives all it has first; busy gives the 350 kB left to the low watermark (four files), not up to
        // the high one.
        #expect(log.evictions.filter { $0.dir == "other" }.count == 4)
        #expect(
            log.evictions.filter { $0.dir == "busy" }.map(\.file) == (0..<4).map { "old\($0)" },
            "\(log.evictions.map(\.file))")
        #expect(fs.free >= Self.low && fs.free < Self.high, "\(fs.free)")
        let line = try #require(log.trims.first { $0.dir == "busy" })
        #expect(line.skipped == nil && line.shortBy == 0 && line.removed == 4, "\(line)")
        #expect(busy.exists("old4") && !other.exists("o3"))
    }

    @Test func betweenTheWatermarksAWaitingDirectoryGivesNothingAndSaysWhy() throws {
        let clock = ManualClock(), log = EventLog()
        let (watcher, fs, busy, other) = try Self.busyAndOther(clock, log) // (each tree lives as long as it is held)
        defer { watcher.stop() }
        fs.leave(free: Self.low - 300_000) // other's 400 kB are enough to be back above the low watermark
        clock.advance(by: 1)
        #expect(log.evictions.map(\.dir) == Array(repeating: "other", count: 4))
        let object = try JSONSerialization.jsonObject(
            with: Data(WardenEvent(.trim(try #require(log.trims.first { $0.dir == "busy" }))).jsonLine().utf8))
        let line = try #require(object as? [String: Any])
        #expect(
            line["skipped"] as? String == "trim_after_idle" && line["freed"] as? Int == 0 && line["short_by"] == nil,
            "\(line)")
        #expect(line["reason"] as? String == "low_disk" && line["low_watermark"] as? Int == Int(Self.low))
        #expect(busy.exists("old0") && !other.exists("o3") && fs.free >= Self.low)
        // Nothing else may go now: the purge ends, and later checks leave busy alone while it stays below the
        // target (a disk between the watermarks is left alone).
        clock.advance(by: 5)
        #expect(busy.exists("old0") && log.trims.filter { $0.reason == .lowDisk }.count == 2)
    }
}
