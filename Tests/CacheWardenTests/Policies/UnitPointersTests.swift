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
        for (k, age) in [(0, 1_000_030.0), (1, 1_000_011), (2, 1_000_021)] { tree.write("wheels/idx/p\(k).rev", size: 100, mtime: age) }
        tree.mkdir("other")
        symlink(tree.url("archive-v0/a2/data"), tree.url("other/abs"))   // absolute, into a2
        symlink(outside.url("precious"), tree.url("wheels/idx/out"))      // out of the root
        symlink(".", tree.url("archive-v0/a1/self"))                      // inside its own unit
        let h = try WatcherHarness(tree, quota: 70_000, basis: .apparent) {
            $0.evictUnit = .depth(2)
            $0.evictPointers = true
            $0.protect = ["*.lock"]
            $0.trimTo = .percent(70)
        }
        tree.write("archive-v0/a9/data", size: 20_000)   // 80.3 kB > 70 kB: trim to 49 kB
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["archive-v0/a1", "archive-v0/a2"])
        #expect(h.log.evictions.map(\.files) == [2, 2], "each unit's file and its pointer's .rev")
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
