import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// Age expiry, manual clear with phases, protect/exclude rules, order keys, dry run.
@Suite struct CleaningPolicyTests {
    @Test func filesPastMaxAgeAreExpiredAtStartupWithTouchDates() throws {
        let tree = TemporaryTree()
        tree.write("fresh", size: 100)
        tree.write("sub/old", size: 100)
        tree.write("ancient", size: 100)
        // Ages set with touch -d, as a user would.
        #expect(try runProcess("/usr/bin/touch", ["-d", "5 days ago", tree.url("sub/old")]).status == 0)
        #expect(try runProcess("/usr/bin/touch", ["-d", "40 days ago", tree.url("ancient")]).status == 0)
        let h = try WatcherHarness(tree, basis: .apparent) { $0.maxAge = 3 * 86_400 }
        #expect(!tree.exists("sub/old"))
        #expect(!tree.exists("ancient"))
        #expect(tree.exists("fresh"))
        #expect(eventually { !h.log.trims.isEmpty })
        let trim = try #require(h.log.trims.first)
        #expect(trim.reason == .age)
        #expect(trim.removed == 2)
        #expect(Set(h.log.evictions.map(\.file)) == ["sub/old", "ancient"])
        #expect(h.log.evictions.allSatisfy { $0.reason == .age })
        #expect(h.total == 100)
    }

    @Test func theExpiryTimerRemovesFilesAsTheyAge() throws {
        let tree = TemporaryTree()
        let clock = ManualClock()
        // 2 s; the timer ticks every 1 s
        let h = try WatcherHarness(tree, basis: .apparent, clock: clock) { $0.maxAge = 2 }
        tree.write("short-lived", size: 10)
        #expect(eventually { h.log.writes.contains { $0.file == "short-lived" } })
        #expect(h.total == 10)
        // Written after the clock started: not yet 2 s old at the ticks of 1 s and 2 s, older at 3 s.
        clock.advance(by: 2)
        #expect(tree.exists("short-lived") && h.log.trims.isEmpty)
        clock.advance(by: 1)
        #expect(!tree.exists("short-lived"))
        let trim = try #require(h.log.trims.first)
        #expect(trim.reason == .age && trim.removed == 1)
        #expect(h.log.evictions.map(\.file) == ["short-lived"])
        #expect(h.total == 0)
    }

    @Test func clearReportsItsPhasesInOrderAndFreesWhatDisappeared() throws {
        let tree = TemporaryTree()
        for i in 0..<50 { tree.write("d\(i % 5)/f\(i)", size: 1000 + i) }
        let h = try WatcherHarness(tree, basis: .apparent)
        let before = diskTotals(tree.path, basis: .apparent).total
        let phases = Mutex<[ClearProgress]>([])
        let report = try h.watcher.clear { p in phases.withLock { $0.append(p) } }
        let seen = phases.withLock { $0 }
        // Phases in order, each at least once; progress within 0…1 and never going back.
        var order: [ClearPhase] = []
        for p in seen where order.last != p.phase { order.append(p.phase) }
        #expect(order == [.preCalculating, .cleaning, .postCalculating, .done])
        #expect(seen.allSatisfy { $0.progress >= 0 && $0.progress <= 1 })
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.progress <= $1.progress })
        let done = try #require(seen.last)
        #expect(done.freed == before)
        #expect(report.freed == before)
        #expect(report.removed == 50)
        #expect(diskTotals(tree.path).files == 0)
        // The root and its subdirectories stay (prune_dirs is off).
        #expect(tree.exists("d3"))
        // The same phases went out as events.
        #expect(
            eventually {
                h.log.all.contains {
                    if case .clear(let c) = $0.kind { return c.phase == .done }; return false
                }
            })
    }

    @Test func clearWithPruneDirsRemovesEmptiedSubdirectoriesButNotTheRoot() throws {
        let tree = TemporaryTree()
        tree.write("a/b/c/f", size: 10)
        tree.write("keep/file.keep", size: 10)
        let h = try WatcherHarness(tree) {
            $0.pruneDirs = true; $0.protect = ["*.keep"]
        }
        try h.watcher.clear()
        #expect(!tree.exists("a"))
        #expect(tree.exists("keep/file.keep"))
        #expect(tree.exists(""))
    }

    @Test func protectedFilesAreCountedButNeverDeletedAndShortByIsReported() throws {
        let tree = TemporaryTree()
        tree.write("db/index.db", size: 8000, mtime: 1_000_000)
        tree.write("old.tmp", size: 1000, mtime: 1_000_001)
        let h = try WatcherHarness(tree, quota: 9500, basis: .apparent) { $0.protect = ["*.db"] }
        #expect(h.total == 9000)
        tree.write("new.tmp", size: 1000) // 10,000 > 9,500 → target 4,750: only 8,000 protected left
        #expect(eventually { !h.log.trims.isEmpty })
        let trim = try #require(h.log.trims.first)
        #expect(tree.exists("db/index.db"))
        #expect(trim.total == 8000)
        #expect(trim.shortBy == 8000 - 4750)
        #expect(trim.totalBefore - trim.freed == trim.total)
    }

    @Test func excludedPathsAreNeitherCountedNorDeleted() throws {
        let tree = TemporaryTree()
        tree.write("URLCACHE/blob", size: 50_000, mtime: 1_000_000)
        tree.write("img/a", size: 1000, mtime: 1_000_001)
        let h = try WatcherHarness(tree, quota: 1500, basis: .apparent) { $0.exclude = ["URLCACHE/**"] }
        #expect(h.total == 1000)
        tree.write("URLCACHE/more", size: 9000)
        tree.write("img/b", size: 1000)
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(tree.exists("URLCACHE/blob"))
        #expect(tree.exists("URLCACHE/more"))
        #expect(!tree.exists("img/a"))
    }

    @Test func openedOrderEvictsTheLeastRecentlyOpenedEvenWhenMtimesDisagree() throws {
        let tree = TemporaryTree()
        // By mtime "a" is the oldest; but it is read after startup, so "b" is the least recently opened.
        tree.write("a", size: 1000, mtime: 1_000_000)
        tree.write("b", size: 1000, mtime: 2_000_000)
        tree.write("c", size: 1000, mtime: 3_000_000)
        let h = try WatcherHarness(tree, quota: 3500, basis: .apparent) { $0.order = .opened }
        var lastOpen: Int64 = 0
        for name in ["c", "a"] {
            // An open counts from when the watcher saw it, on the clock file times use (coarse: a tick of a few
            // ms): each open waits for a later tick than the one before, so the two are ordered.
            #expect(eventually { Syscall.fileClockNanoseconds() > lastOpen })
            let fd = open(tree.url(name), O_RDONLY)
            close(fd)
            #expect(eventually { (h.watcher.ledgerFiles("cache")[name]?.age ?? 0) > 3_000_000 * 1_000_000_000 })
            lastOpen = h.watcher.ledgerFiles("cache")[name]?.age ?? 0
        }
        tree.write("d", size: 1000) // 4000 > 3500 → target 1750: three go, least recently opened first
        #expect(eventually { !h.log.trims.isEmpty })
        // By mtime the order would be a, b, c; by last open it is b (never opened), c, a.
        #expect(h.log.evictions.map(\.file) == ["b", "c", "a"])
        #expect(tree.exists("d"))
    }

    @Test func ctimeAndBtimeOrdersAreAccepted() throws {
        for order in [AgeOrder.ctime, .btime, .atime] {
            let tree = TemporaryTree()
            tree.write("x", size: 1000)
            let h = try WatcherHarness(tree, quota: 1500, basis: .apparent) { $0.order = order }
            tree.write("y", size: 1000)
            #expect(eventually { !h.log.trims.isEmpty }, "\(order)")
            #expect(h.log.evictions.first?.file == "x", "\(order)")
        }
    }

    @Test func dryRunReportsEvictionsAndDeletesNothing() throws {
        let tree = TemporaryTree()
        for i in 0..<5 { tree.write("f\(i)", size: 1000, mtime: Double(1_000_000 + i)) }
        let log = EventLog()
        let watcher = Watcher(
            settings: WardenSettings(
                directories: [DirectorySettings(name: "c", path: tree.path, quota: 4000)], sizeBasis: .apparent),
            mode: .dryRun
        ) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        #expect(eventually { !log.trims.isEmpty })
        let trim = try #require(log.trims.first)
        #expect(trim.dryRun)
        #expect(trim.removed == 3)
        #expect(log.evictions.allSatisfy { $0.dryRun })
        for i in 0..<5 { #expect(tree.exists("f\(i)")) }
        #expect(watcher.totals()[0].total == 5000)
    }

    @Test func statusReportsOldestAgeProtectedBytesAndFreeSpace() throws {
        let tree = TemporaryTree()
        tree.write("k.db", size: 700, mtime: Date().timeIntervalSince1970 - 3600)
        tree.write("x", size: 300)
        let h = try WatcherHarness(tree, basis: .apparent) { $0.protect = ["*.db"] }
        let s = try #require(h.watcher.status().first)
        #expect(s.totals.total == 1000)
        #expect(s.protectedBytes == 700)
        #expect(abs(Date().timeIntervalSince(try #require(s.oldest)) - 3600) < 5)
        #expect((s.filesystemFree ?? 0) > 0)
    }

    @Test func globsMatchWithinAndAcrossSegments() {
        let g = GlobMatcher(["*.db", "keep/**", "a/*/c", "x?z"])
        #expect(g.matches(Array("index.db".utf8)))
        #expect(g.matches(Array("deep/in/side.db".utf8)))
        #expect(g.matches(Array("keep/a/b/c".utf8)))
        #expect(g.matches(Array("keep".utf8)))
        #expect(g.matches(Array("a/b/c".utf8)))
        #expect(!g.matches(Array("a/b/b/c".utf8)))
        #expect(g.matches(Array("xyz".utf8)))
        #expect(!g.matches(Array("x/z".utf8)))
        #expect(!g.matches(Array("index.dbx".utf8)))
        let anchored = GlobMatcher(["/CACHEDIR.TAG", "/.tmp*/**"])
        #expect(
            anchored.matches(Array("CACHEDIR.TAG".utf8)) && !anchored.matches(Array("archive-v0/x/CACHEDIR.TAG".utf8)))
        #expect(anchored.matches(Array(".tmpAB/a/b".utf8)) && !anchored.matches(Array("a/.tmpAB/b".utf8)))
    }
}
