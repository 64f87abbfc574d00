import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

extension EventLog {
    var deferrals: [DeferredTrim] {
        all.compactMap {
            if case .deferred(let d) = $0.kind { return d }; return nil
        }
    }
    var errors: [WardenIssue] {
        all.compactMap {
            if case .error(let e) = $0.kind { return e }; return nil
        }
    }
}

/// A trim takes the cache's client lock first and waits while the client holds it: nothing deleted, one `deferred`
/// line naming the holder, retries with back-off on the watcher's clock, an `error` line past `client_lock_wait`,
/// and a lock file removed, replaced or created during a trim stops it. Real locks, a manual clock.
@Suite struct ClientLockTrimTests {
    static let old = Date().timeIntervalSince1970 - 86_400

    /// A root of `files` files of 10 kB (oldest first: f0, f1, …) and an empty `.lock`.
    static func tree(files: Int = 10) -> TemporaryTree {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        for i in 0..<files { tree.write("f\(i)", size: 10_000, mtime: old + Double(i)) }
        return tree
    }

    /// A started watcher on the manual clock: quota 50 kB (trim to 25 kB), `client_lock = .lock`.
    static func watcher(
        _ tree: TemporaryTree, _ clock: ManualClock, _ log: EventLog, wait: Int64 = 3600,
        _ configure: (inout DirectorySettings) -> Void = { _ in }
    ) throws -> Watcher {
        var dir = DirectorySettings(name: "c", path: tree.path, quota: 50_000)
        dir.clientLock = ClientLocks([ClientLock(".lock")])
        configure(&dir)
        var settings = WardenSettings(directories: [dir], sizeBasis: .apparent)
        settings.clientLockWait = wait
        let watcher = Watcher(settings: settings, clock: clock, log: log)
        try watcher.start()
        return watcher
    }

    @Test func aTrimWaitsForTheLockWithOneLineAndBacksOff() throws {
        let tree = Self.tree()
        let holder = HeldByTest(tree.url(".lock"))
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log)
        defer { watcher.stop() }
        // The start-up trim found the lock held: nothing deleted, one line naming this very process.
        let first = try #require(log.deferrals.first)
        #expect(
            log.deferrals.count == 1 && log.trims.isEmpty && log.evictions.isEmpty && diskTotals(tree.path).files == 11)
        #expect(
            first.reason == .quota && first.busy.why == .held && first.busy.lock == ".lock" && first.retrySeconds == 1)
        #expect(
            first.busy.holders.map(\.pid) == [getpid()]
                && first.busy.holders[0].command == String(ProcessInfo.processInfo.processName.prefix(15)),
            "\(first.busy.holders)")
        let line = WardenEvent(.deferred(first)).jsonLine()
        #expect(
            line.contains("\"event\":\"deferred\"")
                && line.contains(
                    "\"dir\":\"c\",\"reason\":\"quota\",\"lock\":\".lock\",\"why\":\"held\",\"pid\":\(getpid()),"),
            "\(line)")
        // Tries after 1, 2, 4 s: each finds it held (no new line), and the next waits twice as long.
        for (step, next) in [(1.0, 2.0), (2, 4), (4, 8)] {
            clock.advance(by: step)
            #expect(
                watcher.status()[0].deferred?.retrySeconds == next,
                "\(String(describing: watcher.status()[0].deferred))")
        }
        #expect(log.deferrals.count == 1 && log.evictions.isEmpty)
        // Released now, the trim comes at its next try (8 s after the last), not before.
        holder.release()
        clock.advance(by: 7)
        #expect(log.trims.isEmpty, "a try came before its back-off")
        clock.advance(by: 1)
        let trim = try #require(log.trims.first)
        #expect(trim.reason == .quota && trim.total <= 25_000 && log.deferrals.count == 1)
        #expect(watcher.status()[0].deferred == nil && tree.exists(".lock"), "the lock file is never a victim")
        #expect(!isFlocked(tree.url(".lock")), "the watcher still holds the lock after its trim")
    }

    @Test func pastClientLockWaitOneErrorLineAndItGoesOnWaiting() throws {
        let tree = Self.tree()
        let holder = try LockHolderProcess.flock(tree.url(".lock"))
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log, wait: 120)
        defer { watcher.stop() }
        #expect(log.deferrals.first?.busy.holders.first?.pid == holder.pid)
        #expect(log.deferrals.first?.busy.holders.first?.command == "sleep")
        clock.advance(by: 110)
        #expect(log.errors.isEmpty && watcher.status()[0].deferred?.overdue == false)
        clock.advance(by: 70) // tries come at most a minute apart: one lands past 120 s
        let error = try #require(log.errors.first)
        #expect(
            error.kind == "client_lock_wait" && error.dir == "c" && error.message.contains("pid \(holder.pid) (sleep)"),
            "\(error)")
        #expect(
            watcher.status()[0].deferred?.overdue == true && (watcher.status()[0].deferred?.waitedSeconds ?? 0) >= 120)
        clock.advance(by: 600)
        #expect(
            log.errors.count == 1 && log.evictions.isEmpty && log.deferrals.count == 1, "never broken, one line each")
        holder.release()
        clock.advance(by: 60)
        #expect(log.trims.first?.total ?? .max <= 25_000 && watcher.status()[0].deferred == nil)
    }

    /// During a trim (from the veto hook, called before each deletion) the lock file is removed, replaced, or — when
    /// there was none — created: the trim stops there (`"why":"vanished"`), and the next try goes on.
    @Test(arguments: ["removed", "replaced", "created"])
    func aLockFileChangedDuringATrimStopsIt(_ change: String) throws {
        let tree = Self.tree()
        if change == "created" { tree.remove(".lock") }
        let lock = tree.url(".lock")
        let victims = Mutex(0)
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.shouldEvict = { _ in
                let n = victims.withLock {
                    $0 += 1; return $0
                }
                guard n == 3 else { return true }
                switch change {
                case "removed": unlink(lock)
                case "replaced":
                    close(open(lock + ".new", O_CREAT | O_WRONLY, 0o644))
                    rename(lock + ".new", lock)
                default: close(open(lock, O_CREAT | O_WRONLY, 0o644))
                }
                return true
            }
        }
        defer { watcher.stop() }
        #expect(log.evictions.map(\.file) == ["f0", "f1"], "\(change): \(log.evictions.map(\.file))")
        #expect(
            victims.withLock { $0 } == 3, "\(change): the trim went on looking at candidates after it lost its lock")
        let stop = try #require(log.deferrals.first)
        #expect(stop.busy.why == .vanished && stop.busy.lock == ".lock" && log.deferrals.count == 1, "\(stop)")
        clock.advance(by: 1)
        #expect(log.trims.count == 2 && (log.trims.last?.total ?? .max) <= 25_000, "\(change): \(log.trims)")
        #expect(log.deferrals.count == 1 && watcher.status()[0].deferred == nil)
    }

    @Test func aManualTrimAndAClearAreRefusedWithTheHolderAndDeleteNothing() throws {
        let tree = Self.tree(files: 4)
        let other = TemporaryTree()
        for i in 0..<4 { other.write("g\(i)", size: 10_000) }
        let holder = HeldByTest(tree.url(".lock"), exclusive: true)
        let (clock, log) = (ManualClock(), EventLog())
        var dir = DirectorySettings(name: "c", path: tree.path)
        dir.clientLock = ClientLocks([ClientLock(".lock")])
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "o", path: other.path), dir]),
            clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        for _ in 0..<3 {
            #expect(throws: WardenError.self) { try watcher.trim("c", to: 0) }
        }
        do { try watcher.trim("c", to: 0) } catch {
            guard case .clientLockBusy(let busy) = error else { Issue.record("\(error)"); return }
            #expect(
                busy.holders.map(\.pid) == [getpid()] && error.description.contains("nothing was deleted"), "\(error)")
        }
        #expect(log.deferrals.map(\.reason) == [.manual], "one line for a request asked again and again")
        #expect(watcher.status().first { $0.totals.dir == "c" }?.deferred?.reason == .manual)
        // A clear of both: all or nothing.
        #expect(throws: WardenError.self) { try watcher.clear(["o", "c"]) }
        #expect(log.evictions.isEmpty && diskTotals(other.path).files == 4 && diskTotals(tree.path).files == 5)
        holder.release()
        let report = try watcher.clear(["o", "c"])
        #expect(report.removed == 8 && tree.exists(".lock"))
        #expect(log.deferrals.map(\.reason) == [.manual, .clear])
    }

    @Test func aBusyUnitStaysAndTheTrimTakesTheNext() throws {
        let tree = TemporaryTree()
        for (i, repo) in ["models--a", "models--b", "models--c"].enumerated() {
            tree.write("\(repo)/blobs/x", size: 20_000, mtime: Self.old + Double(i))
            tree.write(".locks/\(repo)/x.lock", size: 0, mtime: Self.old + 100)
        }
        tree.write("models--d/blobs/x", size: 1000) // the newest
        tree.write(".locks/models--d/x.lock", size: 0)
        let holder = HeldByTest(tree.url(".locks/models--a/x.lock"), exclusive: true)
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.quota = 50_000
            dir.evictUnit = .entry
            dir.clientLock = ClientLocks([ClientLock(".locks/{unit}/*.lock")])
        }
        defer { watcher.stop() }
        // 61 kB > 50 kB: to 25 kB. models--a is the oldest, but its blob is being downloaded.
        #expect(log.evictions.map(\.file) == ["models--b", "models--c"], "\(log.evictions)")
        #expect(tree.exists("models--a/blobs/x") && log.deferrals.isEmpty && tree.exists(".locks/models--b/x.lock"))
        #expect(!isFlocked(tree.url(".locks/models--b/x.lock")) && !isFlocked(tree.url(".locks/models--c/x.lock")))
        // A clear deletes file by file: each file's unit's locks are taken before it goes, so models--a stays.
        let cleared = try watcher.clear(["c"])
        #expect(
            cleared.removed == 1 && !tree.exists("models--d/blobs/x") && tree.exists("models--a/blobs/x"), "\(cleared)")
        #expect(!isFlocked(tree.url(".locks/models--d/x.lock")))
        holder.release()
        #expect(try watcher.clear(["c"]).removed == 1 && !tree.exists("models--a/blobs/x"))
    }

    @Test func aLowDiskPurgeWaitsForTheLockAndGoesOnAfterIt() throws {
        // 2.5 MB on a scripted 4 MiB filesystem: less than 50 % free. The purge goes on to 2.2 MiB free.
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        for i in 0..<10 { tree.write("f\(i)", size: 250_000, mtime: Self.old + Double(i)) }
        let holder = HeldByTest(tree.url(".lock"))
        let (clock, log) = (ManualClock(), EventLog())
        var dir = DirectorySettings(name: "c", path: tree.path)
        dir.clientLock = ClientLocks([ClientLock(".lock")])
        let settings = WardenSettings(
            directories: [dir], sizeBasis: .apparent, lowDiskFree: .percent(50),
            lowDiskAction: .trim, lowDiskInterval: 600)
        let watcher = Watcher(settings: settings, clock: clock, disk: LowDiskTests.filesystem(holding: tree), log: log)
        try watcher.start()
        defer { watcher.stop() }
        #expect(
            log.lowDisks.count == 1 && log.deferrals.first?.reason == .lowDisk && log.evictions.isEmpty, "\(log.names)")
        clock.advance(by: 3) // tries at 1 s and 3 s, both held: the purge is still on (nothing was deleted)
        holder.release()
        clock.advance(by: 4)
        let free = LowDiskTests.size - diskTotals(tree.path, basis: .apparent).total
        #expect(
            log.trims.first?.reason == .lowDisk && free >= LowDiskTests.size * 11 / 20, "\(log.trims), free \(free)")
        #expect(log.deferrals.count == 1)
    }

    @Test func lockFilesStayProtectedAfterAReload() throws {
        let tree = Self.tree(files: 4)
        tree.setMtime(".lock", Self.old - 100) // the oldest file of all
        let (clock, log) = (ManualClock(), EventLog())
        var dir = DirectorySettings(name: "c", path: tree.path, quota: 1_000_000)
        dir.clientLock = ClientLocks([ClientLock(".lock")])
        let watcher = Watcher(
            settings: WardenSettings(directories: [dir], sizeBasis: .apparent), clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        dir.quota = 20_000
        try watcher.reload(WardenSettings(directories: [dir], sizeBasis: .apparent))
        #expect(log.trims.first?.total ?? .max <= 10_000 && tree.exists(".lock"), "\(log.evictions.map(\.file))")
        #expect(
            watcher.status()[0].protectedBytes == 0
                && watcher.status()[0].clientLock == ClientLocks([ClientLock(".lock")]))
    }
}
