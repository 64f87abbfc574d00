import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A trim never breaks the cache's client: it waits for the directory to be idle, and spares what is in use.
@Suite struct IdleAndSparingTests {
    @Test func aWriterThatKeepsWritingSeesNoDeferredTrimUntilItStops() throws {
        let tree = TemporaryTree()
        let clock = ManualClock()
        let h = try WatcherHarness(tree, quota: 100_000, basis: .apparent, clock: clock) {
            $0.trimAfterIdle = 1
            $0.hardQuota = .percent(1000)
        }
        // 5 kB every 100 ms (of the manual clock) for 3 s: the quota is crossed after 2 s, and the writer goes on for
        // another second (its rhythm is the scenario: a build writing its cache). Each write is seen before the
        // clock moves, so the clock stands at the write's time when the watcher notes the activity.
        var crossedAt: Int?
        for i in 0..<30 {
            tree.write("build-\(i)", size: 5000)
            #expect(eventually { h.log.writes.contains { $0.file == "build-\(i)" } })
            if crossedAt == nil && h.total > 100_000 { crossedAt = i }
            clock.advance(by: 0.1)
            #expect(h.log.trims.isEmpty, "a trim came while the writer was still writing (file \(i))")
        }
        let crossed = try #require(crossedAt)
        clock.advance(by: 0.8) // idle for 0.9 s
        #expect(h.log.trims.isEmpty, "the trim came less than the idle time after the last write")
        clock.advance(by: 0.2) // idle for 1.1 s: the wake-up at 1 s has run
        let trim = try #require(h.log.trims.first)
        // It waited from the crossing until a second after the last write.
        let waited = 2.9 + 1 - Double(crossed) / 10
        #expect(abs((trim.deferredSeconds ?? 0) - waited) < 0.001, "\(trim), crossed at write \(crossed)")
        #expect(trim.total <= 50_000)
        #expect(WardenEvent(.trim(trim)).jsonLine().contains("\"deferred_s\":"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func crossingTheHardQuotaTrimsAtOnceDespiteTheIdleWait() throws {
        let tree = TemporaryTree()
        let clock = ManualClock()
        let h = try WatcherHarness(tree, quota: 100_000, basis: .apparent, clock: clock) {
            $0.trimAfterIdle = 600 // ten minutes
            $0.hardQuota = .percent(150)
        }
        for i in 0..<12 { tree.write("a\(i)", size: 10_000) } // 120 kB: over the quota, under the hard quota
        tree.write("marker", size: 1)
        #expect(eventually { h.log.writes.contains { $0.file == "marker" } })
        clock.advance(by: 599) // idle for a second less than the wait
        #expect(h.log.trims.isEmpty)
        for i in 0..<4 { tree.write("b\(i)", size: 10_000) } // 160 kB: over 150 %
        #expect(eventually { !h.log.trims.isEmpty }) // with the clock standing still: at once
        let trim = try #require(h.log.trims.first)
        #expect(trim.deferredSeconds == 599, "it waited only until the hard quota was crossed: \(trim)")
        // 12 × 10 kB + 1 B + 3 × 10 kB is already past 150 kB: the trim may run before b3 is written, and b3 then
        // lands on top of the trimmed total. The trim itself went down to half the quota.
        #expect(trim.total <= 50_000, "\(trim.total)")
        #expect(eventually { h.total <= 60_000 && h.totalsMatchDisk(basis: .apparent) })
    }

    @Test func anOpenReaderAndAYoungFileSurviveWhileOlderClosedFilesGo() throws {
        let tree = TemporaryTree()
        let old = Date().timeIntervalSince1970 - 10 * 86_400
        tree.write("open-oldest", size: 10_000, mtime: old)
        for i in 0..<4 { tree.write("closed\(i)", size: 10_000, mtime: old + 1 + Double(i)) }
        tree.write("young", size: 10_000) // now: younger than min_age
        let h = try WatcherHarness(tree, quota: 70_000, basis: .apparent) { $0.minAge = 3600 }
        let reader = open(tree.url("open-oldest"), O_RDONLY)
        defer { close(reader) }
        // Its IN_OPEN is read before a marker's records: once the marker is counted, the open is known.
        tree.write("marker", size: 1, mtime: old + 100)
        #expect(eventually { h.log.writes.contains { $0.file == "marker" } })
        // Moved in whole (one IN_MOVED_TO: never "being written"): 80 kB > 70 kB, trim to 35 kB.
        let staging = TemporaryTree("cw-staging")
        staging.write("crossing", size: 20_000, mtime: old + 200)
        #expect(Glibc.rename(staging.url("crossing"), tree.url("crossing")) == 0)
        #expect(eventually { !h.log.trims.isEmpty })
        let evicted = Set(h.log.evictions.map(\.file))
        #expect(!evicted.contains("open-oldest") && !evicted.contains("young"), "\(h.log.all.map { $0.jsonLine() })")
        #expect(evicted.isSuperset(of: (0..<4).map { "closed\($0)" }))
        #expect(tree.exists("open-oldest") && tree.exists("young"))
        // Left with the open, the young and the newest files, the trim says it fell short and why.
        let trim = try #require(h.log.trims.last)
        if trim.shortBy > 0 { #expect((trim.spared?.inUse ?? 0) + (trim.spared?.young ?? 0) > 0, "\(trim)") }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func cacheDirTagSurvivesTrimsAndClear() throws {
        let tree = TemporaryTree()
        let tag = "Signature: 8a477f597d28d172789f06886806bc55\n# this folder is a cache\n"
        for i in 0..<10 { tree.write("sub/f\(i)", size: 10_000, mtime: 2_000_000 + Double(i)) }
        for dir in ["", "sub/"] {
            try tag.write(toFile: tree.url(dir + "CACHEDIR.TAG"), atomically: false, encoding: .utf8)
            tree.setMtime(dir + "CACHEDIR.TAG", 1_000_000) // the oldest files of the tree
        }
        let h = try WatcherHarness(tree, quota: 60_000, basis: .apparent)
        #expect(eventually { !h.log.trims.isEmpty })
        try h.watcher.clear()
        #expect(tree.exists("CACHEDIR.TAG") && tree.exists("sub/CACHEDIR.TAG"))
        #expect(!h.log.evictions.contains { $0.file.hasSuffix("CACHEDIR.TAG") })
        #expect(h.files == 2)
    }

    @Test func oneEntryLargerThanTheTargetGoesAloneAndTheRestStays() throws {
        // pip wrote a 55 MB entry into an 80 MB quota: the trim to 40 MB must take that entry, not every older
        // one and then it too (here in kB).
        let tree = TemporaryTree()
        for i in 0..<6 { tree.write("old\(i)", size: 5_000, mtime: 1_000_000 + Double(i)) }
        let h = try WatcherHarness(tree, quota: 80_000, basis: .apparent)
        // Written in place, as a client that does not write-then-rename: while it is being written and crosses
        // the quota, nothing older is deleted (that could not reach the target); once closed, it goes alone.
        tree.write("huge-entry", size: 55_000) // 85 kB > 80 kB: target 40 kB; the rest is 30 kB
        #expect(eventually { h.log.evictions.contains { $0.file == "huge-entry" } })
        let eviction = try #require(h.log.evictions.first)
        #expect(eviction.file == "huge-entry")
        #expect(eviction.reason == .oversize)
        #expect(WardenEvent(.evict(eviction)).jsonLine().contains("\"reason\":\"oversize\""))
        #expect(h.log.evictions.count == 1)
        for i in 0..<6 { #expect(tree.exists("old\(i)")) }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }
}
