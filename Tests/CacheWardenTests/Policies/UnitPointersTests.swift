import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// `evict_pointers` without a client: a unit goes with the symlinks into it from elsewhere in the root (relative
/// or absolute) and the files named after each link, pointers first; a protected companion, a link out of the
/// root and what it leads to stay; a pointer read more recently than its unit makes the unit younger.
@Suite struct UnitPointersTests {
    @Test func aUnitGoesWithItsPointersAndAYoungPointerKeepsItsUnit() throws {
        let tree = TemporaryTree(), outside = TemporaryTree()
        outside.write("precious", size: 100)
        tree.mkdir("wheels/idx")
        for k in 0..<3 {
            tree.write("archive-v0/a\(k)/data", size: 20_000, mtime: 1_000_000 + Double(k * 10))
            symlink("../../archive-v0/a\(k)", tree.url("wheels/idx/p\(k)"))
            tree.write("wheels/idx/p\(k).lock", size: 0, mtime: 1_000_000)
        }
        // a0's files are the oldest, but its pointer was read last: it is the youngest unit.
        for (k, age) in [(0, 1_000_030.0), (1, 1_000_011), (2, 1_000_021)] {
            tree.write("wheels/idx/p\(k).rev", size: 100, mtime: age)
        }
        tree.mkdir("other")
        symlink(tree.url("archive-v0/a2/data"), tree.url("other/abs")) // absolute, into a2
        symlink(outside.url("precious"), tree.url("wheels/idx/out")) // out of the root
        symlink(".", tree.url("archive-v0/a1/self")) // inside its own unit
        let h = try WatcherHarness(tree, quota: 70_000, basis: .apparent) {
            $0.evictUnit = .depth(2)
            $0.evictPointers = ["wheels", "other"]
            $0.pointerExtensions = ["rev"] // as a profile lists its pointer files: the `.lock` is none
            $0.protect = ["*.lock"]
            $0.trimTo = .percent(70)
        }
        tree.write("archive-v0/a9/data", size: 20_000) // 80.3 kB > 70 kB: trim to 49 kB
        #expect(eventually { !h.log.trims.isEmpty })
        let byUnit = UnitPointersDoubtTests.byUnit(h.log.evictions)
        #expect(byUnit.map(\.unit) == ["archive-v0/a1", "archive-v0/a2"])
        #expect(
            byUnit.map(\.pointers) == [
                ["wheels/idx/p1.rev", "wheels/idx/p1"], ["wheels/idx/p2.rev", "wheels/idx/p2", "other/abs"],
            ],
            "each pointer file and link has its own evict line, before its unit's")
        #expect(h.log.evictions.map(\.size).sorted() == [0, 0, 0, 100, 100, 20_000, 20_000], "links free nothing")
        let units = h.log.evictions.filter { $0.files != nil }
        #expect(units.map(\.files) == [1, 1] && units.map(\.pointers) == [1, 2], "a1's link, a2's two")
        for k in 1...2 {
            #expect(!tree.exists("wheels/idx/p\(k)") && !tree.exists("wheels/idx/p\(k).rev"), "p\(k) left behind")
            #expect(tree.exists("wheels/idx/p\(k).lock"), "a protected companion stays")
        }
        #expect(tree.exists("wheels/idx/p0") && tree.exists("wheels/idx/p0.rev") && tree.exists("archive-v0/a0/data"))
        #expect(!tree.exists("other/abs") && tree.exists("wheels/idx/out") && outside.exists("precious"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// Without the key, the links and their files stay (what the uv profile did before it set the key).
    @Test func withoutTheKeyPointersStay() throws {
        let tree = TemporaryTree()
        tree.mkdir("wheels/idx")
        for k in 0..<2 {
            tree.write("archive-v0/a\(k)/data", size: 20_000, mtime: 1_000_000 + Double(k * 10))
            symlink("../../archive-v0/a\(k)", tree.url("wheels/idx/p\(k)"))
            tree.write("wheels/idx/p\(k).rev", size: 100, mtime: 1_000_001 + Double(k * 10))
        }
        let h = try WatcherHarness(tree, quota: 50_000, basis: .apparent) { $0.evictUnit = .depth(2) }
        tree.write("archive-v0/a9/data", size: 20_000)
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.first?.file == "archive-v0/a0" && h.log.evictions.first?.files == 1)
        #expect(tree.exists("wheels/idx/p0.rev"))
    }
}

/// The folders holding the links are units themselves (uv's `wheels-v8/index` is one: `evict_unit = depth:2`).
@Suite struct UnitPointersInUnitsTests {
    /// `links/l0` (oldest) holds the link `p` into a1 and its `.rev`: it goes whole first, the link with it; a1
    /// then goes with no pointer left to delete (its link's folder is gone from the ledger: nothing is looked for
    /// in the root, where a link `p` saying the same stays). a2 goes with its pointer `q` from `links/l1`, which
    /// goes after it with the file it has left.
    @Test func aFolderOfLinksThatIsAUnitGoesBeforeOrAfterWhatItPointsAt() throws {
        let tree = TemporaryTree()
        tree.write("archive-v0/a1/data", size: 20_000, mtime: 1_000_010)
        tree.mkdir("links/l0")
        symlink("../../archive-v0/a1", tree.url("links/l0/p"))
        tree.write("links/l0/p.rev", size: 100, mtime: 1_000_005)
        symlink("../../archive-v0/a1", tree.url("p")) // the same words in the root: not a pointer (out of it)
        tree.write("archive-v0/a2/data", size: 20_000, mtime: 1_000_020)
        tree.mkdir("links/l1")
        symlink("../../archive-v0/a2", tree.url("links/l1/q"))
        tree.write("links/l1/q.rev", size: 100, mtime: 1_000_030)
        tree.write("links/l1/other", size: 200, mtime: 1_000_031)
        let h = try UnitPointersDoubtTests.trimmed(tree, quota: 50_000, pointers: ["links"]) {
            $0.trimTo = .bytes(20_100)
        }
        #expect(
            h.log.evictions.map(\.file) == [
                "links/l0", "archive-v0/a1", "links/l1/q.rev", "links/l1/q", "archive-v0/a2", "links/l1",
            ])
        #expect(h.log.evictions.map(\.files) == [1, 1, nil, nil, 1, 1])
        #expect(h.log.evictions.map(\.pointers) == [nil, nil, nil, nil, 1, nil])
        #expect(h.log.all.filter { $0.name == "error" }.isEmpty)
        #expect(
            tree.exists("p") && !tree.exists("links/l0") && !tree.exists("links/l1") && !tree.exists("archive-v0/a2"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A dry run's clear counts each pointer once: the link `both` passes through a0 into a1 (a pointer of both),
    /// its `.rev` is also a file of the unit `wheels/idx`; the bytes it would free are the root's, once.
    @Test func aDryRunClearCountsEachPointerOnce() throws {
        let tree = TemporaryTree()
        tree.write("archive-v0/a0/data", size: 20_000, mtime: 1_000_000)
        tree.write("archive-v0/a1/data", size: 20_000, mtime: 1_000_010)
        tree.mkdir("wheels/idx")
        symlink("../../archive-v0/a0/../a1", tree.url("wheels/idx/both"))
        tree.write("wheels/idx/both.rev", size: 100, mtime: 1_000_001)
        tree.write("wheels/idx/other", size: 300, mtime: 1_000_002)
        let h = try WatcherHarness(tree, basis: .apparent) {
            $0.evictUnit = .depth(2)
            $0.evictPointers = ["wheels"]
        }
        let total = h.total
        let report = try h.watcher.clear(dryRun: true)
        #expect(report.freed == total && total == 40_400, "\(report)")
        #expect(eventually { h.log.trims.count == 1 }, "the clear's trim line comes after its evict lines")
        let lines = h.log.evictions
        #expect(lines.allSatisfy(\.dryRun) && lines.map(\.size).reduce(0, +) == total)
        #expect(
            lines.map(\.file) == [
                "wheels/idx/both.rev", "wheels/idx/both", "archive-v0/a0", "wheels/idx", "archive-v0/a1",
            ],
            "\(lines.map(\.file))")
        #expect(lines.map(\.files) == [nil, nil, 1, 1, 1] && lines.compactMap(\.pointers).reduce(0, +) == 1)
        #expect(
            tree.exists("wheels/idx/both") && tree.exists("wheels/idx/both.rev") && tree.exists("archive-v0/a0/data"))
    }
}
