import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// The review of `client_lock`: a unit whose locks cannot be taken is an `error` line (never silently "in use"),
/// descriptors stay bounded, a pattern's folder replaced while held is seen, a low-disk member found busy after an
/// idle skip has no `trim` line, and a clear's prune pass keeps the units found busy earlier in it.
@Suite struct ClientLockReviewTests {
    static let old = Date().timeIntervalSince1970 - 86_400

    /// A root of huggingface-like units: `models--X/blob` (oldest first) and `.locks/models--X/e0.lock`.
    static func units(_ names: [String]) -> TemporaryTree {
        let tree = TemporaryTree()
        for (i, name) in names.enumerated() {
            tree.write("\(name)/blob", size: 20_000, mtime: old + Double(i))
            tree.write(".locks/\(name)/e0.lock", size: 0, mtime: old + 100)
        }
        return tree
    }

    /// A unit whose lock cannot be taken at all (here a folder where the lock file should be): one `error` line
    /// saying why; the unit stays, and is not counted as in use, and the other units go.
    @Test func aUnitLockThatCannotBeTakenIsAnErrorLineNotInUse() throws {
        let tree = Self.units(["models--a", "models--b", "models--c"])
        tree.mkdir("locks/models--a/lock")
        for name in ["models--b", "models--c"] { tree.write("locks/\(name)/lock", size: 0, mtime: Self.old + 100) }
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try ClientLockGuardTests.watcher(tree, clock, log) { dir in
            dir.quota = 50_000
            dir.evictUnit = .entry
            dir.clientLock = ClientLocks([ClientLock("locks/{unit}/lock")])
        }
        defer { watcher.stop() }
        #expect(log.evictions.map(\.file) == ["models--b", "models--c"], "\(log.evictions.map(\.file))")
        let error = try #require(log.errors.first { $0.kind == "client_lock" }, "\(log.errors)")
        #expect(
            error.dir == "c" && error.message.contains("locks/models--a/lock") && error.message.contains("directory"),
            "\(error)")
        #expect(log.trims.first?.spared?.inUse ?? 0 == 0 && log.deferrals.isEmpty, "\(log.trims)")
        #expect(tree.exists("models--a/blob"))
    }

    /// huggingface_hub keeps one lock file per blob and never deletes them: a unit's take opened all of them at once,
    /// and past the process's descriptor limit (`EMFILE`) the unit was silently "busy" and never trimmed. The CLI
    /// raises the soft limit to the hard one: the big repository goes.
    @Test func aUnitWithMoreLockFilesThanTheSoftLimitGoesOnceTheLimitIsRaised() throws {
        let tree = Self.bigRepository(lockFiles: 300)
        let r = try runProcess(
            "/bin/sh",
            [
                "-c", "ulimit -S -n 128 && exec \"$0\" clear -c \"$1\" --no-wait", cachewardenBinary(),
                tree.url("c.conf"),
            ],
            environment: ["RUNTIME_DIRECTORY": nil])
        #expect(r.status == 0 && !tree.exists("cache/models--big") && !tree.exists("cache/models--small"), "\(r)")
        #expect(!r.out.contains("\"event\":\"error\""), "\(r.out)")
    }

    /// Where the hard limit is low too, a unit whose lock files are more than the descriptors a trim may hold for
    /// units is one `error` line naming why, and stays; the others go.
    @Test func aUnitWithMoreLockFilesThanTheBudgetIsAnErrorLine() throws {
        let tree = Self.bigRepository(lockFiles: 300)
        let r = try runProcess(
            "/bin/sh",
            ["-c", "ulimit -n 128 && exec \"$0\" clear -c \"$1\" --no-wait", cachewardenBinary(), tree.url("c.conf")],
            environment: ["RUNTIME_DIRECTORY": nil])
        #expect(r.status == 0 && tree.exists("cache/models--big/blob") && !tree.exists("cache/models--small"), "\(r)")
        let errors = r.out.split(separator: "\n").filter { $0.contains("\"event\":\"error\"") }
        #expect(
            errors.count == 1 && errors[0].contains("\"kind\":\"client_lock\"") && errors[0].contains("300 lock files"),
            "\(r.out)")
    }

    /// `cache/models--big` with `lockFiles` lock files, `cache/models--small` with one, and `c.conf` clearing them.
    static func bigRepository(lockFiles: Int) -> TemporaryTree {
        let tree = TemporaryTree()
        tree.write("cache/models--big/blob", size: 20_000, mtime: old)
        tree.write("cache/models--small/blob", size: 20_000, mtime: old + 1)
        tree.write("cache/.locks/models--small/e0.lock", size: 0)
        for i in 0..<lockFiles { tree.write("cache/.locks/models--big/e\(i).lock", size: 0) }
        let conf =
            "dir.cache.path = cache\ndir.cache.evict_unit = entry\ndir.cache.client_lock = .locks/{unit}/*.lock\n"
        try? conf.write(toFile: tree.url("c.conf"), atomically: true, encoding: .utf8)
        return tree
    }

    /// huggingface_hub's lock folder of a repository renamed away and made anew while a clear deletes that
    /// repository file by file, a download's lock held in the new one: the re-check finds the folder at the path
    /// from the root (not the descriptor taken before), and the rest of the repository stays.
    @Test func aLockFolderReplacedWhileHeldIsSeen() throws {
        let tree = TemporaryTree()
        tree.write(".locks/models--a/e1.lock", size: 0, mtime: Self.old)
        tree.write("models--a/keep", size: 10, mtime: Self.old)
        tree.write("models--a/f1", size: 1000, mtime: Self.old + 1)
        tree.write("models--a/f2", size: 1000, mtime: Self.old + 2)
        let download = Mutex<LockHolderProcess?>(nil)
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try ClientLockGuardTests.watcher(tree, clock, log) { dir in
            dir.evictUnit = .entry
            dir.protect = ["keep"]
            dir.clientLock = ClientLocks([ClientLock(".locks/{unit}/*.lock")])
            dir.shouldEvict = { candidate in
                if candidate.file == "models--a/f2" {
                    rename(tree.url(".locks/models--a"), tree.url(".locks/old"))
                    tree.write(".locks/models--a/e1.lock", size: 0)
                    download.withLock {
                        $0 = try? LockHolderProcess.flock(tree.url(".locks/models--a/e1.lock"), shared: false)
                    }
                }
                return true
            }
        }
        defer { watcher.stop() }
        let cleared = try watcher.clear(["c"])
        #expect(download.withLock { $0 != nil }, "flock(1) did not take the new lock file")
        #expect(
            cleared.removed == 1 && !tree.exists("models--a/f1") && tree.exists("models--a/f2"),
            "\(log.evictions.map(\.file))")
        download.withLock { $0?.release() }
    }

    /// A clear's prune pass (`prune_dirs`) keeps the units found busy earlier in the clear: the lock set of the
    /// run, not a fresh one that tries them again (here the client let go meanwhile; the clear still said busy).
    @Test func aClearsPrunePassKeepsTheUnitsFoundBusyInIt() throws {
        let tree = Self.units(["models--a", "models--b"])
        tree.mkdir("models--a/refs/empty")
        let holder = Mutex<HeldByTest?>(HeldByTest(tree.url(".locks/models--a/e0.lock"), exclusive: true))
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try ClientLockGuardTests.watcher(tree, clock, log) { dir in
            dir.evictUnit = .entry
            dir.pruneDirs = true
            dir.clientLock = ClientLocks([ClientLock(".locks/{unit}/*.lock")])
            dir.shouldEvict = { candidate in
                if candidate.file == "models--b" {
                    holder.withLock {
                        $0?.release(); $0 = nil
                    }
                }
                return true
            }
        }
        defer { watcher.stop() }
        let cleared = try watcher.clear(["c"])
        #expect(holder.withLock { $0 == nil }, "the hook never ran")
        #expect(
            cleared.removed == 1 && !tree.exists("models--b") && tree.exists("models--a/blob"),
            "\(log.evictions.map(\.file))")
        #expect(tree.exists("models--a/refs/empty"), "the prune pass took the busy unit's lock again and emptied it")
    }

    /// A low-disk purge: a member waiting for `trim_after_idle` is skipped in the first rounds, then, below the low
    /// watermark, asked again and found with its client's lock held: a `deferred` line and no `trim` line.
    @Test func aLowDiskMemberSkippedForIdleThenFoundBusyHasNoTrimLine() throws {
        let clock = ManualClock(), log = EventLog()
        let busy = TemporaryTree(), other = TemporaryTree()
        busy.write(".lock", size: 0, mtime: 900_000)
        for i in 0..<25 { busy.write("old\(i)", size: 100_000, mtime: 1_000_000 + Double(i)) }
        for i in 0..<4 { other.write("o\(i)", size: 100_000, mtime: 1_500_000 + Double(i)) }
        let holder = HeldByTest(busy.url(".lock"))
        defer { holder.release() }
        var b = DirectorySettings(name: "busy", path: busy.path, quota: 10_000_000_000)
        b.trimAfterIdle = 600
        b.clientLock = ClientLocks([ClientLock(".lock")])
        let fs = LowDiskRulesTests.Filesystem([busy, other])
        let watcher = try LowDiskRulesTests.watcher(
            [b, DirectorySettings(name: "other", path: other.path)], fs, clock, log)
        defer { watcher.stop() }
        clock.advance(by: 1)
        busy.write("marker", size: 10)
        #expect(eventually { log.writes.contains { $0.file == "marker" } })
        fs.leave(free: LowDiskRulesTests.low - 750_000) // other's 400 kB are not enough: busy is asked in round 3
        clock.advance(by: 1)
        #expect(log.evictions.map(\.dir) == Array(repeating: "other", count: 4), "\(log.evictions.map(\.file))")
        #expect(log.deferrals.map(\.reason) == [.lowDisk] && log.deferrals.first?.busy.why == .held, "\(log.deferrals)")
        #expect(!log.trims.contains { $0.dir == "busy" }, "\(log.trims.filter { $0.dir == "busy" })")
    }

    /// `--timeout 1e19` passed the check and crashed the command (`Int(deadline)`) once a lock was busy: one
    /// usage line now, exit 2, nothing deleted.
    @Test func aTimeoutTooLargeIsOneUsageLine() throws {
        let tree = TemporaryTree()
        tree.write("cache/.lock", size: 0)
        for i in 0..<3 { tree.write("cache/f\(i)", size: 10_000) }
        try "dir.cache.path = cache\ndir.cache.client_lock = .lock\n".write(
            toFile: tree.url("c.conf"), atomically: true, encoding: .utf8)
        let holder = HeldByTest(tree.url("cache/.lock"))
        defer { holder.release() }
        for value in ["1e19", "1e300", "31536001"] {
            let r = try runProcess(
                cachewardenBinary(), ["clear", "-c", tree.url("c.conf"), "--timeout", value],
                environment: ["RUNTIME_DIRECTORY": nil])
            #expect(
                r.status == 2 && r.out.isEmpty && r.err.split(separator: "\n").count == 1
                    && r.err.contains("bad value `\(value)` for --timeout"), "\(value): \(r)")
        }
        #expect(diskTotals(tree.url("cache")).files == 4)
    }
}
