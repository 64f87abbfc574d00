import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A group trim keeps every member's rules, as the member's own quota trim does: whole units with `evict_unit`,
/// no victim while it waits for `trim_after_idle` (the others give its share), no protected, young or open file
/// while anything else is left; and the members' `trim` lines say what each gave and why any gave nothing.
@Suite struct GroupRulesTests {
    /// A watcher on the manual clock over `dirs`, all members of group `g` with this quota.
    static func group(_ dirs: [DirectorySettings], quota: Int64, clock: ManualClock, log: EventLog) throws -> Watcher {
        var dirs = dirs
        for i in dirs.indices { dirs[i].group = "g" }
        var settings = WardenSettings(directories: dirs, sizeBasis: .apparent)
        settings.groups = [GroupSettings(name: "g", quota: quota)]
        let watcher = Watcher(settings: settings, clock: clock, log: log)
        try watcher.start()
        return watcher
    }

    /// Moves a file of `size` bytes into `tree` whole (one `IN_MOVED_TO`: never "being written"), and waits for it.
    static func moveIn(_ name: String, size: Int, mtime: Double? = nil, to tree: TemporaryTree, _ log: EventLog) {
        let staging = TemporaryTree("cw-staging")
        staging.write(name, size: size, mtime: mtime)
        #expect(Glibc.rename(staging.url(name), tree.url(name)) == 0)
        #expect(eventually { log.writes.contains { $0.file == name } })
    }

    /// The group's `trim` lines, parsed back by a JSON parser, by directory.
    static func lines(_ log: EventLog) throws -> [String: [String: Any]] {
        var byDir: [String: [String: Any]] = [:]
        for trim in log.trims where trim.reason == .groupQuota {
            let object = try JSONSerialization.jsonObject(with: Data(WardenEvent(.trim(trim)).jsonLine().utf8))
            let line = try #require(object as? [String: Any])
            byDir[try #require(line["dir"] as? String)] = line
        }
        return byDir
    }

    @Test func aGroupTakesWholeUnitsFromAUnitMemberAndFilesFromAFileMemberInFairShareTurns() throws {
        let units = TemporaryTree(), files = TemporaryTree()
        for k in 0..<10 {
            for part in ["a", "b"] { units.write("pkg\(k)/\(part)", size: 10_000, mtime: 1_000_000 + Double(k * 10)) }
        }
        for i in 0..<20 { files.write("f\(i)", size: 10_000, mtime: 1_000_500 + Double(i)) }
        var u = DirectorySettings(name: "u", path: units.path)
        u.evictUnit = .entry
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.group(
            [u, DirectorySettings(name: "f", path: files.path)], quota: 400_000, clock: clock, log: log)
        defer { watcher.stop() }
        // 410 kB > 400 kB: down to 200 kB, shares 200 kB each. f is furthest above its share, then the tie goes to
        // u (first), which gives a 20 kB unit: f then gives two files to catch up, and so on.
        Self.moveIn("crossing", size: 10_000, mtime: 2_000_000, to: files, log)
        #expect(eventually { log.trims.count == 2 })
        let turns = log.evictions.map(\.dir)
        #expect(
            turns == ["f"] + Array(repeating: ["u", "f", "f"], count: 5).joined(),
            "\(log.evictions.map { "\($0.dir)/\($0.file)" })")
        let unitEvictions = log.evictions.filter { $0.dir == "u" }
        #expect(
            unitEvictions.map(\.file) == (0..<5).map { "pkg\($0)" }
                && unitEvictions.allSatisfy { $0.files == 2 && $0.size == 20_000 })
        #expect(log.evictions.filter { $0.dir == "f" }.allSatisfy { $0.files == nil && $0.size == 10_000 })
        for k in 0..<10 { #expect(units.exists("pkg\(k)/a") == units.exists("pkg\(k)/b"), "pkg\(k) half deleted") }
        #expect(
            diskTotals(units.path, basis: .apparent).total == 100_000
                && diskTotals(files.path, basis: .apparent).total == 100_000)
        #expect(log.trims.allSatisfy { $0.group == "g" && $0.skipped == nil })
    }

    @Test func aMemberWaitingForIdleGivesNothingWhileActiveAndTheOthersGiveMore() throws {
        let go = TemporaryTree(), pip = TemporaryTree()
        for i in 0..<15 { go.write("old\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) } // the oldest files
        for i in 0..<6 { pip.write("p\(i)", size: 10_000, mtime: 1_500_000 + Double(i)) }
        var busy = DirectorySettings(name: "go", path: go.path, quota: 10_000_000)
        busy.trimAfterIdle = 60
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.group(
            [busy, DirectorySettings(name: "pip", path: pip.path)], quota: 220_000, clock: clock, log: log)
        defer { watcher.stop() }
        // 230 kB > 220 kB while go is being written: go, furthest above its share, waits; pip gives all it has.
        Self.moveIn("build1", size: 20_000, to: go, log)
        #expect(eventually { log.trims.count == 2 })
        #expect(log.evictions.allSatisfy { $0.dir == "pip" } && log.evictions.count == 6)
        var lines = try Self.lines(log)
        let waiting = try #require(lines["go"]), gave = try #require(lines["pip"])
        #expect(
            waiting["skipped"] as? String == "trim_after_idle" && waiting["freed"] as? Int == 0
                && waiting["removed"] as? Int == 0)
        #expect(waiting["short_by"] == nil, "a wait is no shortfall: \(waiting)")
        #expect(gave["freed"] as? Int == 60_000 && gave["removed"] as? Int == 6 && gave["skipped"] == nil)
        #expect(gave["target"] as? Int == 110_000, "pip went below its fair share")
        // go keeps writing, still under the group's hard cap (440 kB): with nothing new in pip there is no trim
        // (it could take nothing); a new file in pip is taken, go still waiting.
        Self.moveIn("build2", size: 60_000, to: go, log)
        #expect(log.trims.count == 2, "a trim with nothing to take: \(log.trims.map { ($0.dir, $0.skipped) })")
        Self.moveIn("p-new", size: 10_000, to: pip, log)
        #expect(eventually { log.trims.count == 4 })
        lines = try Self.lines(log)
        #expect(lines["go"]?["skipped"] as? String == "trim_after_idle" && lines["pip"]?["freed"] as? Int == 10_000)
        Self.moveIn("build3", size: 10_000, to: go, log)
        #expect(log.trims.count == 4)
        #expect(go.exists("old0") && !pip.exists("p-new"))
        // Idle for its minute: go gives at once, alone, and its line says how long the group waited.
        clock.advance(by: 59)
        #expect(log.trims.count == 4)
        clock.advance(by: 1)
        let last = try #require(log.trims.last)
        #expect(last.dir == "go" && last.skipped == nil && last.removed > 0 && last.deferredSeconds == 60, "\(last)")
        #expect(!go.exists("old0") && diskTotals(go.path, basis: .apparent).total <= 110_000)
    }

    @Test func aGroupAboveTwiceItsQuotaTakesFromAWaitingMemberAtOnce() throws {
        let go = TemporaryTree(), pip = TemporaryTree()
        for i in 0..<9 { go.write("old\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        pip.write("p0", size: 5_000, mtime: 1_500_000)
        var busy = DirectorySettings(name: "go", path: go.path, quota: 10_000_000)
        busy.trimAfterIdle = 600
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.group(
            [busy, DirectorySettings(name: "pip", path: pip.path)], quota: 100_000, clock: clock, log: log)
        defer { watcher.stop() }
        Self.moveIn("a", size: 20_000, to: go, log) // 115 kB: over the quota, under the cap: go waits
        #expect(eventually { log.trims.count == 2 })
        #expect(log.trims.first { $0.dir == "go" }?.skipped == .trimAfterIdle && log.evictions.map(\.file) == ["p0"])
        Self.moveIn("b", size: 100_000, to: go, log) // 210 kB > 200 % of 100 kB: no waiting, with the clock still
        #expect(eventually { log.trims.count == 3 })
        let trim = try #require(log.trims.last)
        #expect(trim.dir == "go" && trim.skipped == nil && trim.total <= 50_000, "\(trim)")
        #expect(!go.exists("old0") && log.evictions.contains { $0.dir == "go" && $0.file == "old8" })
    }

    @Test func eachMemberThatGaveNothingSaysWhyOnItsLine() throws {
        let young = TemporaryTree(), kept = TemporaryTree(), giver = TemporaryTree(), empty = TemporaryTree()
        for i in 0..<4 { young.write("y\(i)", size: 10_000) } // now: younger than min_age
        for i in 0..<4 { kept.write("k\(i).lock", size: 10_000, mtime: 1_000_000 + Double(i)) }
        for i in 0..<4 { giver.write("g\(i)", size: 10_000, mtime: 1_500_000 + Double(i)) }
        var y = DirectorySettings(name: "young", path: young.path)
        y.minAge = 3600
        var k = DirectorySettings(name: "kept", path: kept.path)
        k.protect = ["*.lock"]
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.group(
            [
                y, k, DirectorySettings(name: "giver", path: giver.path),
                DirectorySettings(name: "empty", path: empty.path),
            ],
            quota: 120_000, clock: clock, log: log)
        defer { watcher.stop() }
        // 130 kB > 120 kB: down to 60 kB, shares of 30 kB. giver is furthest over first; then young and kept (ties,
        // in order) have nothing they may give, giver gives everything, and empty is asked last.
        Self.moveIn("crossing", size: 10_000, mtime: 1_600_000, to: giver, log)
        #expect(eventually { log.trims.count == 4 })
        let lines = try Self.lines(log)
        #expect(lines["empty"]?["skipped"] as? String == "nothing_left" && lines["empty"]?["spared"] == nil)
        let y0 = try #require(lines["young"]), k0 = try #require(lines["kept"]), g0 = try #require(lines["giver"])
        #expect(
            y0["skipped"] as? String == "min_age" && (y0["spared"] as? [String: Any])?["young"] as? Int == 4, "\(y0)")
        #expect(
            k0["skipped"] as? String == "spared" && (k0["spared"] as? [String: Any])?["protected"] as? Int == 4, "\(k0)"
        )
        #expect(y0["freed"] as? Int == 0 && k0["freed"] as? Int == 0 && y0["removed"] as? Int == 0)
        #expect(g0["freed"] as? Int == 50_000 && g0["removed"] as? Int == 5 && g0["skipped"] == nil, "\(g0)")
        #expect(log.evictions.allSatisfy { $0.dir == "giver" })
        #expect(
            WardenEvent(.trim(try #require(log.trims.first { $0.dir == "kept" }))).jsonLine().contains(
                "\"skipped\":\"spared\""))
    }

    /// A directory `a` for the sparing tests: its oldest file (`open-old`, `open` bytes, to be held open), a
    /// protected `keep.lock`, a `CACHEDIR.TAG`, a closed `a1` and a `young` file (`each` bytes; `min_age` is an
    /// hour).
    static func spareable(open: Int, each: Int) -> (TemporaryTree, DirectorySettings) {
        let a = TemporaryTree()
        a.write("open-old", size: open, mtime: 900_000)
        a.write("keep.lock", size: each, mtime: 900_001)
        a.write("CACHEDIR.TAG", size: each, mtime: 900_002)
        a.write("a1", size: each, mtime: 1_000_000)
        a.write("young", size: each) // now: younger than min_age
        var dir = DirectorySettings(name: "a", path: a.path)
        dir.protect = ["*.lock"]
        dir.minAge = 3600
        return (a, dir)
    }

    /// Opens `a`'s `open-old` (closed by the caller) and waits until the watcher knows: its IN_OPEN is read before
    /// the records of an empty `marker` written after it.
    static func holdOpen(_ a: TemporaryTree, _ log: EventLog) -> Int32 {
        let reader = Glibc.open(a.url("open-old"), O_RDONLY)
        a.write("marker", size: 0, mtime: 1_000_001)
        #expect(reader >= 0 && eventually { log.writes.contains { $0.file == "marker" } })
        return reader
    }

    @Test func protectedYoungAndOpenFilesAreSparedAcrossTheGroup() throws {
        let (a, sa) = Self.spareable(open: 40_000, each: 1_000), b = TemporaryTree()
        for i in 0..<7 { b.write("b\(i)", size: 10_000, mtime: 1_100_000 + Double(i)) }
        var sb = DirectorySettings(name: "b", path: b.path)
        sb.weight = 4 // shares of 120 kB: a 24 kB, b 96 kB
        let clock = ManualClock(), log = EventLog()
        let watcher = try Self.group([sa, sb], quota: 120_000, clock: clock, log: log)
        defer { watcher.stop() }
        let reader = Self.holdOpen(a, log)
        defer { close(reader) }
        // 44 + 70 + 10 = 124 kB > 120 kB: down to 60 kB. a is furthest above its share, but once a1 (and the empty
        // marker) are gone all it has is open, protected (the lock, the tag) or young: b gives the rest, although
        // its files are newer than the open one.
        Self.moveIn("crossing", size: 10_000, mtime: 1_200_000, to: b, log)
        #expect(eventually { log.trims.count == 2 })
        let evicted = log.evictions.map { "\($0.dir)/\($0.file)" }
        #expect(
            evicted.first == "a/a1" && !evicted.contains("a/open-old") && !evicted.contains("a/keep.lock")
                && !evicted.contains("a/young"), "\(evicted)")
        #expect(
            a.exists("open-old") && a.exists("keep.lock") && a.exists("CACHEDIR.TAG") && a.exists("young")
                && !a.exists("a1"))
        #expect(evicted.filter { $0.hasPrefix("b/") }.count == 7, "\(evicted)")
        let sum = diskTotals(a.path, basis: .apparent).total + diskTotals(b.path, basis: .apparent).total
        #expect(sum <= 60_000, "\(sum)")
    }
}
