import Foundation
import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// Watermarks, file counts, directories' own blocks, and eviction units.
@Suite struct LimitsAndUnitsTests {
    @Test func trimAtAndTrimToSetWhereATrimStartsAndWhereItEnds() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, quota: 100_000, basis: .apparent) {
            $0.trimAt = .percent(90)
            $0.trimTo = .bytes(30_000)
        }
        for i in 0..<9 { tree.write("f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) } // 90 kB: at, not above
        tree.write("marker", size: 0, mtime: 1_500_000) // empty: the total stays at 90 kB
        #expect(eventually { h.log.writes.contains { $0.file == "marker" } })
        #expect(h.log.trims.isEmpty)
        tree.write("g", size: 1_000) // 91 kB > 90 % of 100 kB: trim to 30 kB
        #expect(eventually { !h.log.trims.isEmpty })
        let trim = try #require(h.log.trims.first)
        #expect(trim.target == 30_000)
        #expect(trim.total <= 30_000 && trim.total > 20_000)
        #expect(h.log.evictions.map(\.file).prefix(3) == ["f0", "f1", "f2"])
    }

    @Test func maxFilesTrimsOldestFirstToHalfTheCount() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) { $0.maxFiles = 10 }
        for i in 0..<10 { tree.write("f\(i)", size: 100, mtime: 1_000_000 + Double(i)) }
        tree.write("marker", size: 0)
        #expect(eventually { !h.log.trims.isEmpty }) // 11 files > 10: down to 5
        let trim = try #require(h.log.trims.first)
        #expect(trim.reason == .maxFiles)
        #expect(trim.targetFiles == 5)
        #expect(h.files == 5)
        #expect(h.log.evictions.map(\.file) == (0..<6).map { "f\($0)" })
        #expect(WardenEvent(.trim(trim)).jsonLine().contains("\"reason\":\"max_files\""))
    }

    @Test(.enabled(if: which("du") != nil, "needs du"))
    func countingDirectoriesMakesTheTotalEqualDuS() throws {
        // nginx's levels=1:2 layout: 16 × 16 folders whose own blocks a file-only total does not see.
        let tree = TemporaryTree()
        for i in 0..<200 { tree.write(String(format: "%x/%02x/entry%d", i % 16, i % 256, i), size: 700 + i) }
        let h = try WatcherHarness(tree) { $0.countDirectories = true }
        func du() throws -> Int64 {
            let r = try runProcess(which("du")!, ["-s", "-B1", tree.path])
            return Int64(r.out.split(separator: "\t").first ?? "") ?? -1
        }
        #expect(h.total == (try du()))
        // Folders and files added and removed at run time.
        for i in 0..<300 { tree.write(String(format: "n%x/%02x/more%d", i % 7, i % 31, i), size: 100) }
        tree.remove("3")
        #expect(eventually { (try? du()) == h.total }, "watcher \(h.total), du \((try? du()) ?? -1)")
    }

    @Test(.enabled(if: (try? Syscall.fileSystemMagic("/dev/shm")) == 0x0102_1994, "needs /dev/shm on tmpfs"))
    func aTrimKeepsCountedDirectoriesExactWhereTheyShrink() throws {
        // tmpfs, unlike ext4, gives a folder back 20 bytes of apparent size per name it loses: the trim's own
        // deletions must reach the ledger like anyone's. The 32 oldest files fill folder a; b holds the 40 newer
        // ones. 72 kB in a 60 kB quota: the trim takes a's 32 files and 10 of b's.
        let tree = TemporaryTree(under: "/dev/shm")
        for i in 0..<32 { tree.write("a/f\(i)", size: 1_000, mtime: 1_000_000 + Double(i)) }
        for i in 0..<40 { tree.write("b/g\(i)", size: 1_000, mtime: 2_000_000 + Double(i)) }
        let h = try WatcherHarness(tree, quota: 60_000, basis: .apparent) { $0.countDirectories = true }
        func du() throws -> Int64 {
            // CacheWarden's trash, kept at the top once it has trimmed, is none of the cache's (never counted).
            let r = try runProcess(
                which("du")!, ["-s", "-B1", "--apparent-size", "--exclude=\(TrashFolder.name)", tree.path])
            return Int64(r.out.split(separator: "\t").first ?? "") ?? -1
        }
        #expect(eventually { h.log.evictions.count > 32 }, "\(h.log.evictions.count) evictions")
        #expect(eventually { (try? du()) == h.total }, "watcher \(h.total), du \((try? du()) ?? -1)")
    }

    @Test func entryUnitsAreDeletedWholeAndNeverHalf() throws {
        let tree = TemporaryTree()
        // Four snapshot folders (a package's versions), oldest first, and one whose oldest file is protected.
        for (k, name) in ["v1", "v2", "v3", "v4"].enumerated() {
            for i in 0..<3 { tree.write("\(name)/part\(i)", size: 10_000, mtime: 1_000_000 + Double(k * 10 + i)) }
        }
        tree.write("v0/keep.lock", size: 1_000, mtime: 900_000)
        tree.write("v0/data", size: 10_000, mtime: 900_001)
        tree.write("loose-file", size: 10_000, mtime: 1_000_035)
        let h = try WatcherHarness(tree, quota: 150_000, basis: .apparent) {
            $0.evictUnit = .entry
            $0.protect = ["*.lock"]
        }
        tree.write("v5/part0", size: 50_000) // 161 kB > 150 kB: trim to 75 kB
        #expect(eventually { !h.log.trims.isEmpty })
        let units = h.log.evictions.map(\.file)
        #expect(units.prefix(2) == ["v1", "v2"], "\(units)")
        #expect(h.log.evictions.first?.files == 3)
        // v0 holds a protected file: skipped whole, never half-deleted.
        #expect(tree.exists("v0/data") && tree.exists("v0/keep.lock"))
        for unit in units where unit.hasPrefix("v") { #expect(!tree.exists(unit), "\(unit) half deleted") }
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(WardenEvent(.evict(h.log.evictions[0])).jsonLine().contains("\"files\":3"))
    }

    /// `jobs/job<k>/out0` and `out1`, 10 kB each, older with each job (the units at depth 2).
    static func writeJobs(_ jobs: Range<Int>, in tree: TemporaryTree) {
        for job in jobs {
            for f in 0..<2 {
                tree.write("jobs/job\(job)/out\(f)", size: 10_000, mtime: 1_000_000 + Double(job * 10 + f))
            }
        }
    }

    @Test func depthUnitsTakeTheFoldersAtThatDepth() throws {
        let tree = TemporaryTree()
        Self.writeJobs(0..<4, in: tree)
        let h = try WatcherHarness(tree, quota: 85_000, basis: .apparent) { $0.evictUnit = .depth(2) }
        tree.write("jobs/job9/out", size: 10_000) // 90 kB > 85 kB: trim to 42.5 kB
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["jobs/job0", "jobs/job1", "jobs/job2"])
        #expect(tree.exists("jobs") && !tree.exists("jobs/job0"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A unit holding two names of one file frees that file's bytes, and its `evict` line says so (it said 0: each
    /// name's share was read while the other was still counted).
    @Test func aUnitWithTwoNamesOfOneFileFreesItsBytes() throws {
        let tree = TemporaryTree()
        tree.write("jobs/job0/out", size: 10_000, mtime: 1_000_000)
        #expect(link(tree.url("jobs/job0/out"), tree.url("jobs/job0/out-again")) == 0)
        Self.writeJobs(1..<4, in: tree)
        let h = try WatcherHarness(tree, quota: 75_000, basis: .apparent) { $0.evictUnit = .depth(2) }
        tree.write("jobs/job9/out", size: 10_000) // 80 kB > 75 kB: trim to 37.5 kB
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["jobs/job0", "jobs/job1", "jobs/job2"])
        #expect(h.log.evictions.map(\.size) == [10_000, 20_000, 20_000])
        #expect(h.log.evictions.first?.files == 2)
        #expect(h.log.trims.first?.freed == 50_000)
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A dry run's clear says what the real clear then does, line for line: a file outside every unit counted once
    /// (it was counted again by the file-by-file pass after the units), hard links inside a unit and across two.
    @Test func aDryRunClearSaysWhatTheClearDoes() throws {
        let tree = TemporaryTree()
        tree.write("loose.bin", size: 5_000, mtime: 1_000_000)
        tree.write("jobs/job0/a", size: 10_000, mtime: 1_000_001)
        #expect(link(tree.url("jobs/job0/a"), tree.url("jobs/job0/b")) == 0)
        tree.write("jobs/job1/c", size: 10_000, mtime: 1_000_002)
        tree.write("jobs/job2/e", size: 7_000, mtime: 1_000_003)
        #expect(link(tree.url("jobs/job2/e"), tree.url("jobs/job1/d")) == 0)
        let h = try WatcherHarness(tree, basis: .apparent) { $0.evictUnit = .depth(2) }
        let total = h.total
        let dry = try h.watcher.clear(dryRun: true)
        #expect(eventually { h.log.trims.count == 1 })
        let said = h.log.evictions
        let real = try h.watcher.clear()
        #expect(eventually { h.log.trims.count == 2 })
        let done = Array(h.log.evictions.dropFirst(said.count))
        #expect(dry.freed == total && real.freed == total && dry.removed == real.removed, "\(dry) \(real)")
        #expect(said.allSatisfy(\.dryRun) && !done.contains(where: \.dryRun))
        #expect(said.map(\.file) == done.map(\.file) && said.map(\.size) == done.map(\.size), "\(said) \(done)")
        #expect(said.map(\.files) == done.map(\.files))
        #expect(h.log.trims.map(\.freed) == [total, total])
        #expect(!tree.exists("jobs/job0") && !tree.exists("loose.bin") && h.totalsMatchDisk(basis: .apparent))
    }

    /// A root named twice in one clear is cleared once: one `trim` line, what it held freed once.
    @Test func aRootNamedTwiceIsClearedOnce() throws {
        let tree = TemporaryTree()
        for k in 0..<4 { tree.write("f\(k)", size: 1_000, mtime: 1_000_000 + Double(k)) }
        let h = try WatcherHarness(tree, basis: .apparent)
        let report = try h.watcher.clear([h.name, h.name])
        #expect(report.freed == 4_000 && report.removed == 4 && report.dirs == [h.name], "\(report)")
        #expect(eventually { h.log.trims.count == 1 })
        #expect(h.log.trims.map(\.freed) == [4_000] && h.log.evictions.count == 4)
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A `CACHEDIR.TAG` inside a unit does not pin it (a uvx environment in uv's `archive-v0/<id>/` has one): the
    /// unit goes whole with its tag. The root's own tag, a file shallower than the units, stays.
    @Test func aTagInsideAUnitGoesWithItAndTheRootsTagStays() throws {
        let tree = TemporaryTree()
        tree.write("CACHEDIR.TAG", size: 43, mtime: 900_000)
        for k in 0..<3 {
            tree.write("archive-v0/e\(k)/CACHEDIR.TAG", size: 43, mtime: 1_000_000 + Double(k * 10))
            tree.write("archive-v0/e\(k)/lib/mod.py", size: 20_000, mtime: 1_000_001 + Double(k * 10))
        }
        let h = try WatcherHarness(tree, quota: 70_000, basis: .apparent) { $0.evictUnit = .depth(2) }
        tree.write("archive-v0/e9/lib/mod.py", size: 20_000) // 80 kB > 70 kB: trim to 35 kB, the three oldest
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["archive-v0/e0", "archive-v0/e1", "archive-v0/e2"])
        #expect(!tree.exists("archive-v0/e2") && tree.exists("CACHEDIR.TAG") && tree.exists("archive-v0/e9/lib/mod.py"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A unit goes whole even when it holds symlinks, which are not counted (Hugging Face's `snapshots/<rev>/` links
    /// into `blobs/`): the links go — never what they point at — and no folder of dangling links is left.
    @Test func aUnitWithSymlinksGoesWholeAndTheirTargetsStay() throws {
        let tree = TemporaryTree(), outside = TemporaryTree()
        outside.write("precious", size: 100)
        for k in 0..<3 {
            let repo = "models--org--m\(k)"
            tree.write("\(repo)/blobs/b\(k)", size: 20_000, mtime: 1_000_000 + Double(k * 10))
            tree.write("\(repo)/refs/main", size: 40, mtime: 1_000_000 + Double(k * 10))
            tree.mkdir("\(repo)/snapshots/rev")
            symlink("../../blobs/b\(k)", tree.url("\(repo)/snapshots/rev/model.bin"))
            symlink(outside.url("precious"), tree.url("\(repo)/snapshots/rev/outside"))
            symlink(outside.path, tree.url("\(repo)/snapshots/dirlink"))
        }
        let h = try WatcherHarness(tree, quota: 70_000, basis: .apparent) { $0.evictUnit = .entry }
        tree.write("models--org--new/blobs/b", size: 20_000) // 80 kB > 70 kB: trim to 35 kB
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["models--org--m0", "models--org--m1", "models--org--m2"])
        for k in 0..<3 { #expect(!tree.exists("models--org--m\(k)"), "models--org--m\(k) left behind") }
        #expect(outside.exists("precious") && tree.exists("models--org--new/blobs/b"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }
}
