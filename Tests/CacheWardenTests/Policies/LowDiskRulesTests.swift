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

        var free: Int64 { LowDiskRulesTests.size - trees.reduce(filler) { $0 + diskTotals($1, basis: .apparent).total } }

        var probe: ScriptedDiskProbe { ScriptedDiskProbe { [self] _ in .success(FreeSpace(free: free, size: LowDiskRulesTests.size)) } }

        /// Fills the disk with other data until `free` bytes are left.
        func leave(free wanted: Int64) { filler += free - wanted }
    }

    static func watcher(_ dirs: [DirectorySettings], _ fs: Filesystem, _ clock: ManualClock, _ log: EventLog) throws -> Watcher {
        var settings = WardenSettings(directories: dirs, sizeBasis: .apparent, lowDiskFree: .percent(50),
                                      lowDiskAction: .trim, lowDiskInterval: 1)
        settings.lowDiskTarget = .percent(75)
        try settings.validate()
        let watcher = Watcher(settings: settings, clock: clock, disk: fs.probe, log: log)
        try watcher.start()
        return watcher
    }

    @Test func aLowDiskPurgeTakesWholeUnitsOldestFirst() throws {
        let tree = TemporaryTree()
        for k in 0..<8 { for part in ["a", "b"] { tree.write("u\(k)/\(part)", size: 200_000, mtime: 1_000_000 + Double(k * 10)) } }
        let fs = Filesystem([tree])
        var dir = DirectorySettings(name: "t", path: tree.path)
        dir.evictUnit = .entry
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.watcher([dir], fs, clock, log)
        defer { watcher.stop() }
        fs.leave(free: Self.low - 100_000)   // something else filled the disk
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
        let sb = DirectorySettings(name: "b", path: b.path, quota: 10_000_000_000)   // far under its quota: purged second
        let fs = Filesystem([a, b])
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.watcher([sa, sb], fs, clock, log)
        defer { watcher.stop() }
        let reader = GroupRulesTests.holdOpen(a, log)
        defer { close(reader) }
        // 2.2 MB to free: a, first, has a1 (and the empty marker) to give, the rest is open, protected or young; b
        // gives the rest (21 files) although its files are newer than the open one.
        fs.leave(free: Self.low - 100_000)
        clock.advance(by: 1)
        let evicted = log.evictions.map { "\($0.dir)/\($0.file)" }
        #expect(evicted.prefix(2) == ["a/a1", "a/marker"] && evicted.filter { $0.hasPrefix("b/") }.count == 21, "\(evicted)")
        #expect(a.exists("open-old") && a.exists("keep.lock") && a.exists("young"), "\(evicted)")
        #expect(fs.free >= Self.high, "\(fs.free)")
    }
}
