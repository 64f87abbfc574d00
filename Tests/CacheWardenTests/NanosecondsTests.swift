import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// Where times and durations combine, the result saturates instead of trapping (an overflow ends the process).
@Suite struct NanosecondsTests {
    @Test func secondsBecomeNanosecondsUpToTheBoundsAndSaturatePastThem() {
        #expect(Nanoseconds.of(seconds: 1) == 1_000_000_000)
        #expect(Nanoseconds.of(seconds: 9_223_372_036) == 9_223_372_036_000_000_000) // the last whole second that fits
        #expect(Nanoseconds.of(seconds: 9_223_372_037) == .max)
        #expect(Nanoseconds.of(seconds: 106_752 * 86_400) == .max) // `max_age = 106752d`, which used to trap `run`
        #expect(Nanoseconds.of(seconds: .max) == .max)
        #expect(Nanoseconds.of(seconds: -9_223_372_037) == .min)
        #expect(Nanoseconds.of(seconds: .min) == .min)
        #expect(Nanoseconds.span(seconds: Int64.max) == UInt64(Int64.max))
        #expect(Nanoseconds.span(seconds: -1) == 0)
        #expect(Nanoseconds.span(timeInterval: 0.25) == 250_000_000)
        #expect(Nanoseconds.span(timeInterval: 1e30) == .max)
        #expect(Nanoseconds.span(timeInterval: -.infinity) == 0 && Nanoseconds.span(timeInterval: .nan) == 0)
    }

    @Test func cutoffsAndDeadlinesSaturateAtTheClocksEnds() {
        let now: Int64 = 1_800_000_000_000_000_000 // 2027
        #expect(Nanoseconds.before(now, seconds: 86_400) == now - 86_400_000_000_000)
        #expect(Nanoseconds.before(now, seconds: 36_500 * 86_400) == now - 3_153_600_000_000_000_000) // 100 years
        #expect(Nanoseconds.before(now, seconds: .max) == now - .max)
        #expect(Nanoseconds.before(-now, seconds: .max) == .min)
        #expect(Nanoseconds.before(.min, seconds: 1) == .min)
        #expect(Nanoseconds.before(.max, seconds: -1) == .max)
        let uptime: UInt64 = 5_000_000_000
        #expect(Nanoseconds.after(uptime, seconds: 7 * 86_400) == uptime + 604_800_000_000_000)
        #expect(Nanoseconds.after(uptime, seconds: .max) == uptime + UInt64(Int64.max))
        #expect(Nanoseconds.after(.max - 1, 2) == .max)
        #expect(Nanoseconds.after(UInt64(Int64.max) + 1, seconds: .max) == .max)
        #expect(Nanoseconds.adding(.max, 1) == .max && Nanoseconds.adding(.min, -1) == .min)
        #expect(Nanoseconds.subtracting(.min, 1) == .min && Nanoseconds.subtracting(.max, -1) == .max)
    }

    @Test func aFileTimePastTheYear2262ReadsAsTheLatestTime() {
        #expect(Nanoseconds.of(timespec(tv_sec: 1_700_000_000, tv_nsec: 5)) == 1_700_000_000_000_000_005)
        #expect(Nanoseconds.of(timespec(tv_sec: 9_223_372_036, tv_nsec: 854_775_807)) == .max)
        #expect(Nanoseconds.of(timespec(tv_sec: 9_223_372_036, tv_nsec: 854_775_808)) == .max)
        #expect(Nanoseconds.of(timespec(tv_sec: 15_000_000_000, tv_nsec: 0)) == .max) // 2445
        #expect(Nanoseconds.of(timespec(tv_sec: -15_000_000_000, tv_nsec: 0)) == .min)
    }

    @Test func aShareOfTheLargestSizeSaturates() {
        #expect(SizeLimit.percent(200).bytes(of: .max) == .max)
        #expect(SizeLimit.percent(10_000).bytes(of: 1 << 60) == .max)
        #expect(SizeLimit.percent(50).bytes(of: .max) == 1 << 62)
        #expect(SizeLimit.percent(200).bytes(of: 1000) == 2000)
    }

    @Test func aFileStampedPastTheYear2262IsCountedAndNeitherReportNorExpiryTraps() throws {
        let tree = TemporaryTree()
        tree.write("cache/far", size: 100, mtime: 15_000_000_000) // 2445: ext4 keeps up to 2446
        tree.write("cache/old", size: 100, mtime: 1_000_000)
        var st = stat()
        try #require(lstat(tree.url("cache/far"), &st) == 0)
        try #require(st.st_mtim.tv_sec > 9_223_372_036, "the filesystem kept no time past 2262 (\(st.st_mtim.tv_sec))")
        let dir = DirectorySettings(name: "cache", path: tree.url("cache"), maxAge: 86_400)
        let report = try Watcher.report(WardenSettings(directories: [dir], sizeBasis: .apparent))
        #expect(report.first?.totals.files == 2)
        let log = EventLog()
        let watcher = Watcher(
            settings: WardenSettings(directories: [dir], sizeBasis: .apparent), clock: ManualClock(), log: log)
        try watcher.start()
        defer { watcher.stop() }
        // The old file expires; the far-future one is the newest there is.
        #expect(eventually { !tree.exists("cache/old") })
        #expect(tree.exists("cache/far"))
    }
}
