import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Shared budgets and paced deletion.
@Suite struct GroupAndPacingTests {
    @Test func aGroupOfThreeIsTrimmedFromTheMemberFurthestAboveItsShare() throws {
        let a = TemporaryTree(), b = TemporaryTree(), c = TemporaryTree()
        for i in 0..<25 { a.write("f\(i)", size: 10_000, mtime: 2_000_000 + Double(i)) }   // 250 kB, share 100 kB
        for i in 0..<5 { b.write("f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }    // 50 kB, share 100 kB, oldest files
        for i in 0..<10 { c.write("f\(i)", size: 10_000, mtime: 1_500_000 + Double(i)) }   // 100 kB, share 200 kB (weight 2)
        var dirs = [DirectorySettings(name: "a", path: a.path), DirectorySettings(name: "b", path: b.path),
                    DirectorySettings(name: "c", path: c.path)]
        for i in dirs.indices { dirs[i].group = "builds" }
        dirs[2].weight = 2
        var settings = WardenSettings(directories: dirs, sizeBasis: .apparent)
        settings.groups = [GroupSettings(name: "builds", quota: 400_000)]
        let log = EventLog()
        let watcher = Watcher(settings: settings) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        a.write("new", size: 10_000)   // 410 kB > 400 kB: the group goes down to 200 kB
        #expect(eventually { !log.trims.isEmpty })
        // a is furthest above its share, then least under it: every victim is a's, although b and c hold the
        // oldest files.
        #expect(log.evictions.allSatisfy { $0.dir == "a" }, "\(log.evictions.map { "\($0.dir)/\($0.file)" })")
        #expect(log.trims.allSatisfy { $0.group == "builds" && $0.reason == .groupQuota })
        // (The trim may run on the new file's first pages; its close then brings a to its final size.)
        var totals: [String: Int64] = [:]
        #expect(eventually {
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
        for i in 0..<5000 { expired.write("d\(i % 50)/f\(i)", size: 10, mtime: old + Double(i)) }
        var slow = DirectorySettings(name: "expired", path: expired.path, maxAge: 86_400)
        slow.deleteRate = 2000   // 5,000 files: passes at 0, 1 and 2 s
        let settings = WardenSettings(directories: [slow, DirectorySettings(name: "busy", path: busy.path, quota: 50_000)],
                                      sizeBasis: .apparent)
        let log = EventLog()
        let started = Date()
        let watcher = Watcher(settings: settings) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        // While the expiry is paced, a quota trim in the other directory happens at once.
        for i in 0..<6 { busy.write("f\(i)", size: 10_000) }
        #expect(eventually { log.trims.contains { $0.dir == "busy" } })
        let quotaTrimAfter = Date().timeIntervalSince(started)
        #expect(eventually(timeout: 30) { diskTotals(expired.path).files == 0 })
        let expiryTook = Date().timeIntervalSince(started)
        #expect(expiryTook >= 2.0, "5,000 files at 2,000/s took \(expiryTook) s")
        #expect(quotaTrimAfter < expiryTook)
        // The last pass's line follows its last unlink: wait for the pass that ended below its budget.
        func passes() -> [TrimReport] { log.trims.filter { $0.dir == "expired" && $0.reason == .age } }
        #expect(eventually { passes().contains { !$0.paced } })
        #expect(passes().count >= 3 && passes().dropLast().allSatisfy(\.paced), "\(log.trims.map { ($0.dir, $0.reason, $0.removed, $0.paced) })")
        #expect(passes().allSatisfy { $0.removed <= 2000 })
        #expect(passes().reduce(0) { $0 + $1.removed } == 5000)
    }
}
