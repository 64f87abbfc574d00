import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Client locks across roots and goals: one lock file named by two roots is taken once by this process (a second
/// open and lock of it would conflict with its own first), a member of a group that only says why it gave nothing
/// takes no lock, and a reload that drops a root's lock ends its wait. Real locks, a manual clock.
@Suite struct ClientLockSharedTests {
    static let old = Date().timeIntervalSince1970 - 86_400

    /// cargo's registry and git checkouts both lock `$CARGO_HOME/.package-cache`: a clear of both takes it once,
    /// for both, and lets it go once both are done; a client holding it holds off both.
    @Test func twoRootsSharingALockFileTakeItOnce() throws {
        let home = TemporaryTree()
        home.write(".package-cache", size: 0)
        for i in 0..<3 {
            home.write("registry/f\(i)", size: 1000, mtime: Self.old + Double(i))
            home.write("git/g\(i)", size: 1000, mtime: Self.old + Double(i))
        }
        let dirs = ["registry", "git"].map { name in
            var dir = DirectorySettings(name: name, path: home.url(name))
            dir.clientLock = ClientLocks([ClientLock("../.package-cache")])
            return dir
        }
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = Watcher(settings: WardenSettings(directories: dirs, sizeBasis: .apparent), clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        let holder = HeldByTest(home.url(".package-cache"))
        #expect(throws: WardenError.self) { try watcher.clear(["registry", "git"]) }
        #expect(log.evictions.isEmpty)
        holder.release()
        let report = try watcher.clear(["registry", "git"])
        #expect(report.removed == 6 && log.evictions.count == 6, "\(log.evictions.map(\.file))")
        #expect(!isFlocked(home.url(".package-cache")), "released once both were done")
        #expect(watcher.engine.queue.sync { watcher.engine.state.clientLocks.files.count } == 0)
    }

    /// A member of a group trim that gave nothing for another reason (`trim_after_idle`) only says so on its
    /// `trim` line: it takes no lock, so a client holding it makes no `deferred` line and no wait.
    @Test func aGroupMemberThatOnlyReportsTakesNoLock() throws {
        let go = TemporaryTree(), pip = TemporaryTree()
        go.write(".lock", size: 0)
        for i in 0..<9 { go.write("old\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        pip.write("p0", size: 5_000, mtime: 1_500_000)
        let holder = HeldByTest(go.url(".lock"))
        defer { holder.release() }
        var busy = DirectorySettings(name: "go", path: go.path, quota: 10_000_000)
        busy.trimAfterIdle = 600
        busy.clientLock = ClientLocks([ClientLock(".lock")])
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try GroupRulesTests.group(
            [busy, DirectorySettings(name: "pip", path: pip.path)], quota: 100_000,
            clock: clock, log: log)
        defer { watcher.stop() }
        GroupRulesTests.moveIn("a", size: 20_000, to: go, log) // 115 kB: over the quota, under the cap: go waits
        #expect(eventually { log.trims.count == 2 })
        #expect(
            log.trims.first { $0.dir == "go" }?.skipped == .trimAfterIdle && log.evictions.map(\.file) == ["p0"],
            "\(log.trims)")
        #expect(log.deferrals.isEmpty && watcher.status().allSatisfy { $0.deferred == nil }, "\(log.deferrals)")
    }

    /// A trim waiting for a lock that a reload no longer takes (`client_lock = none`) stops waiting: `status` shows
    /// no wait, and the trim runs.
    @Test func aReloadThatDropsTheLockEndsTheWait() throws {
        let tree = ClientLockTrimTests.tree()
        let holder = HeldByTest(tree.url(".lock"))
        defer { holder.release() }
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try ClientLockTrimTests.watcher(tree, clock, log)
        defer { watcher.stop() }
        #expect(watcher.status()[0].deferred != nil && log.evictions.isEmpty)
        var dir = DirectorySettings(name: "c", path: tree.path, quota: 50_000)
        dir.clientLock = ClientLocks([])
        try watcher.reload(WardenSettings(directories: [dir], sizeBasis: .apparent))
        #expect(watcher.status()[0].deferred == nil, "\(String(describing: watcher.status()[0].deferred))")
        #expect(!log.evictions.isEmpty && log.deferrals.count == 1)
    }
}
