import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Crossing the quota trims oldest-first to half of it, at once, and never deletes what is not ours.
@Suite struct QuotaTrimTests {
    /// For each backend (`poll` at a 1 s interval: the write is seen by the next pass).
    @Test(arguments: testedBackends)
    func crossingTheQuotaTrimsOldestFirstToHalf(_ backend: BackendChoice) throws {
        let tree = TemporaryTree()
        let now = Date().timeIntervalSince1970
        // 10 files of 10,000 bytes with distinct ages: f0 oldest.
        for i in 0..<10 { tree.write("f\(i)", size: 10_000, mtime: now - Double(1000 - i * 10)) }
        let h = try WatcherHarness(tree, quota: 110_000, basis: .apparent) {
            $0.backend = backend; $0.pollInterval = 1
        }
        #expect(h.total == 100_000)
        tree.write("newest", size: 20_000) // 120,000 > 110,000: trim to ≤ 55,000
        #expect(eventually { !h.log.trims.isEmpty })
        let trim = try #require(h.log.trims.first)
        #expect(trim.reason == .quota)
        #expect(trim.total <= 55_000)
        #expect(trim.totalBefore - trim.freed == trim.total)
        #expect(trim.target == 55_000)
        #expect(trim.removed == h.log.evictions.count)
        // The oldest went, in order; the newest stayed.
        #expect(h.log.evictions.map(\.file) == (0..<7).map { "f\($0)" })
        #expect(tree.exists("newest"))
        #expect(tree.exists("f9"))
        #expect(!tree.exists("f0"))
        for e in h.log.evictions { #expect(!tree.exists(e.file), "\(e.file) has an evict line but exists") }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func equalAgesAreTrimmedInPathOrder() throws {
        let tree = TemporaryTree()
        for name in ["c", "a", "b", "d"] { tree.write(name, size: 1000, mtime: 1_000_000) }
        let h = try WatcherHarness(tree, quota: 4500, basis: .apparent)
        tree.write("z", size: 1000)
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["a", "b", "c"])
    }

    @Test func anOverQuotaDirectoryIsTrimmedAtStartup() throws {
        let tree = TemporaryTree()
        for i in 0..<8 { tree.write("f\(i)", size: 1000, mtime: Double(1_000_000 + i)) }
        let h = try WatcherHarness(tree, quota: 4000, basis: .apparent)
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.total <= 2000)
        #expect(h.log.names.first == "ready")
    }

    @Test func aTrimNeverFollowsASymlinkOutOfTheRoot() throws {
        let outside = TemporaryTree("cw-canary")
        for i in 0..<20 { outside.write("old\(i)", size: 10_000, mtime: 1_000_000) }
        outside.write("sub/old", size: 10_000, mtime: 1_000_000)
        let tree = TemporaryTree()
        symlink(outside.path, tree.url("escape"))
        symlink(outside.url("old0"), tree.url("file-link"))
        let h = try WatcherHarness(tree, quota: 50_000, basis: .apparent)
        for i in 0..<10 { tree.write("mine\(i)", size: 10_000) }
        #expect(eventually { !h.log.trims.isEmpty })
        for i in 0..<20 { #expect(outside.exists("old\(i)")) }
        #expect(outside.exists("sub/old"))
        #expect(tree.exists("escape"))
        #expect(tree.exists("file-link"))
        #expect(h.log.evictions.allSatisfy { $0.file.hasPrefix("mine") })
    }

    @Test func theRootItselfIsNeverRemoved() throws {
        let tree = TemporaryTree()
        tree.write("sub/deep/a", size: 10_000, mtime: 1_000_000)
        let h = try WatcherHarness(tree, quota: 15_000, basis: .apparent)
        tree.write("b", size: 10_000)
        #expect(eventually { !h.log.trims.isEmpty })
        try h.watcher.clear()
        #expect(tree.exists(""))
        #expect(tree.exists("sub/deep"))
        #expect(h.total == 0)
    }

    @Test func aFileBeingWrittenIsNotAVictimWhileOthersRemain() throws {
        let tree = TemporaryTree()
        tree.write("old-but-open", size: 0, mtime: 1_000_000)
        tree.write("older-closed", size: 10_000, mtime: 1_000_001)
        tree.write("mid", size: 10_000, mtime: 1_000_002)
        let h = try WatcherHarness(tree, quota: 40_000, basis: .apparent)
        let fd = open(tree.url("old-but-open"), O_WRONLY)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 7, count: 10_000)
        _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, 10_000) }
        tree.setMtime("old-but-open", 1_000_000)
        #expect(eventually { h.total == 30_000 })
        // Moved in whole (one IN_MOVED_TO, never "being written"): 45,000 > 40,000 → target 20,000.
        let staging = TemporaryTree("cw-staging")
        staging.write("new", size: 15_000)
        #expect(Glibc.rename(staging.url("new"), tree.url("new")) == 0)
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(tree.exists("old-but-open"))
        #expect(!tree.exists("older-closed"))
        #expect(eventually { h.total == 10_000 }, "\(h.log.all.map { $0.jsonLine() })")
        #expect(!h.log.evictions.contains { $0.file == "old-but-open" })
    }

    @Test func ownDeletionsAreNotSubtractedTwice() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, quota: 100_000, basis: .apparent)
        for round in 0..<5 {
            for i in 0..<12 { tree.write("r\(round)-\(i)", size: 10_000) }
            #expect(h.totalsMatchDisk(basis: .apparent))
        }
        #expect(eventually { h.log.trims.count >= 4 })
        #expect(h.total >= 0)
    }
}
