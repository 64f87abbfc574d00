import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Shared budgets and paced deletion.
@Suite struct GroupAndPacingTests {
    @Test func aGroupOfThreeIsTrimmedFromTheMemberFurthestAboveItsShare() throws {
        let a = TemporaryTree(), b = TemporaryTree(), c = TemporaryTree()
        for i in 0..<25 { a.write("f\(i)", size: 10_000, mtime: 2_000_000 + Double(i)) } // 250 kB, share 100 kB
        // 50 kB, share 100 kB, oldest files
        for i in 0..<5 { b.write("f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        // 100 kB, share 200 kB (weight 2)
        for i in 0..<10 { c.write("f\(i)", size: 10_000, mtime: 1_500_000 + Double(i)) }
        var dirs = [
            DirectorySettings(name: "a", path: a.path), DirectorySettings(name: "b", path: b.path),
            DirectorySettings(name: "c", path: c.path),
        ]
        for i in dirs.indices { dirs[i].group = "builds" }
        dirs[2].weight = 2
        var settings = WardenSettings(directories: dirs, sizeBasis: .apparent)
        settings.groups = [GroupSettings(name: "builds", quota: 400_000)]
        let log = EventLog()
        let watcher = Watcher(settings: settings) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        a.write("new", size: 10_000) // 410 kB > 400 kB: the group goes down to 200 kB
        #expect(eventually { !log.trims.isEmpty })
        // a is furthest above its share, then least under it: every victim is a's, although b and c hold the
        // oldest files.
        #expect(log.evictions.allSatisfy { $0.dir == "a" }, "\(log.evictions.map { "\($0.dir)/\($0.file)" })")
        #expect(log.trims.allSatisfy { $0.group == "builds" && $0.reason == .groupQuota })
        // (The trim may run on the new file's first pages; its close then brings a to its final size.)
        var totals: [String: Int64] = [:]
        #expect(
            eventually {
                totals = Dictionary(uniqueKeysWithValues: watcher.totals().map { ($0.dir, $0.total) })
                return totals["a"] == 50_000 && totals["b"] == 50_000 && totals["c"] == 100_000
            }, "\(totals)")
        #expect(eventually { !log.trims.isEmpty })
        let trim = try #require(log.trims.first)
        #expect(WardenEvent(.trim(trim)).jsonLine().contains("\"group\":\"builds\""))
    }

    @Test func aPacedExpiryTakesItsTimeWhileAQuotaTrimElsewhereIsImmediate() throws {
        let expired = TemporaryTree(), busy = TemporaryTree()
        let old = Date().timeIntervalSince1970 - 30 * 86_400
        for i in 0..<500 { expired.write("d\(i % 50)/f\(i)", size: 10, mtime: old + Double(i)) }
        var slow = DirectorySettings(name: "expired", path: expired.path, maxAge: 86_400)
        slow.deleteRate = 200 // 500 files: passes at 0, 1 and 2 s
        let settings = WardenSettings(
            directories: [slow, DirectorySettings(name: "busy", path: busy.path, quota: 50_000)],
            sizeBasis: .apparent)
        let clock = ManualClock()
        let log = EventLog()
        let watcher = Watcher(settings: settings, clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        func passes() -> [TrimReport] { log.trims.filter { $0.dir == "expired" && $0.reason == .age } }
        #expect(passes().map(\.removed) == [200] && passes().allSatisfy(\.paced))
        // While the expiry is paced, a quota trim in the other directory happens at once: the clock stands still.
        for i in 0..<6 { busy.write("f\(i)", size: 10_000) }
        #expect(eventually { log.trims.contains { $0.dir == "busy" } })
        #expect(diskTotals(expired.path).files == 300)
        clock.advance(by: 0.999)
        #expect(passes().count == 1, "a pass came before its second")
        clock.advance(by: 0.001)
        #expect(diskTotals(expired.path).files == 100)
        clock.advance(by: 1)
        #expect(diskTotals(expired.path).files == 0)
        #expect(
            passes().count == 3 && passes().dropLast().allSatisfy(\.paced) && passes().last?.paced == false,
            "\(log.trims.map { ($0.dir, $0.reason, $0.removed, $0.paced) })")
        #expect(passes().allSatisfy { $0.removed <= 200 })
        #expect(passes().reduce(0) { $0 + $1.removed } == 500)
        clock.advance(by: 5)
        #expect(passes().count == 3, "a pass after the expiry was done")
    }
}
