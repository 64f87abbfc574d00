import Glibc
import Logging
import Synchronization
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// The whole pipeline — ledger updater, ledger, policies, evictor, sinks — driven by scripted changes from a
/// `FakeBackend` on a real folder, with no inotify: what the stages do with a backend's changes, whatever the
/// backend. Deletions are real, and the totals are compared with a fresh scan of the disk.
@Suite struct FakeBackendPipelineTests {
    /// A watcher on `tree` with a fake backend; returns it, its event log and the fake.
    private func start(
        _ tree: TemporaryTree, quota: Int64 = 0, refuse: @escaping @Sendable (String) -> Bool = { _ in false },
        clock: any WardenClock = SystemClock(), lockWait: Int64 = 3600,
        configure: (inout DirectorySettings) -> Void = { _ in }
    ) throws -> (Watcher, EventLog, FakeBackend) {
        var dir = DirectorySettings(name: "cache", path: tree.path, quota: quota)
        configure(&dir)
        var settings = WardenSettings(directories: [dir], sizeBasis: .apparent)
        settings.clientLockWait = lockWait
        let made = Mutex<FakeBackend?>(nil)
        let log = EventLog()
        let root = try Syscall.canonicalPath(tree.path)
        let watcher = Watcher(
            settings: settings, mode: .enforce, callbackQueue: nil, logger: Logger(label: "test"),
            backend: FakeBackend.factory(root: root, refuse: refuse) { fake in made.withLock { $0 = fake } },
            clock: clock
        ) {
            log.append($0)
        }
        try watcher.start()
        return (watcher, log, try #require(made.withLock { $0 }))
    }

    @Test func aScriptedWriteOverTheQuotaTrimsTheRealFolderOldestFirst() throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("d\(i % 2)/f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        let (watcher, log, fake) = try start(tree, quota: 150_000)
        defer { watcher.stop() }
        #expect(log.trims.isEmpty && watcher.totals()[0].total == 100_000)
        // Written behind the backend's back: nothing is known of it until the fake says so.
        tree.write("d1/big", size: 60_000)
        #expect(watcher.totals()[0].total == 100_000)
        fake.send([.created("d1/big"), .closedAfterWrite("d1/big")])
        // One batch through every stage: the write line, a trim to half the quota, oldest first, real deletions.
        // (Events reach the handler on its own queue: waited for, with a deadline.)
        #expect(eventually { log.trims.count == 1 })
        #expect(log.writes.map(\.file) == ["d1/big"])
        #expect(log.trims.count == 1 && log.trims[0].total <= 75_000)
        #expect(
            log.evictions.map(\.file) == [
                "d0/f0", "d1/f1", "d0/f2", "d1/f3", "d0/f4", "d1/f5", "d0/f6", "d1/f7", "d0/f8",
            ])
        for e in log.evictions { #expect(!tree.exists(e.file)) }
        #expect(fake.suspensions == 0, "the backend is held only while the trim deletes")
        let disk = diskTotals(tree.path, basis: .apparent)
        #expect(watcher.totals()[0].total == disk.total && watcher.totals()[0].files == disk.files)
        // The trim's own deletions reach the ledger as changes like anyone's: nothing is subtracted twice.
        fake.send(log.evictions.map { .deleted($0.file) })
        #expect(watcher.totals()[0].total == disk.total)
    }

    /// How the engine lets the backend rest as a root fills (sparse files: sizes without the bytes; a 200 MiB quota,
    /// so that 64 MiB of headroom is not what decides): long or short rests under half the trim level, no long rest
    /// from half (a long rest could let a fast writer go unseen too long), none from three quarters (the crossing is
    /// read as soon as it is queued).
    @Test func readingRestsLessAsTheQuotaNears() throws {
        let tree = TemporaryTree()
        tree.mkdir("a")
        let (watcher, _, fake) = try start(tree, quota: 200 << 20)
        defer { watcher.stop() }
        for (name, mebibytes, pace) in [
            ("f1", 10, BackendPace.rest), ("f2", 90, .restBriefly), ("f3", 50, .keepReading),
        ] {
            tree.write("a/\(name)", size: 0)
            tree.truncate("a/\(name)", to: mebibytes << 20)
            #expect(fake.send([.created("a/\(name)"), .closedAfterWrite("a/\(name)")]) == pace, "\(name)")
        }
        #expect(watcher.totals()[0].total == 150 << 20)
    }

    /// The thresholds for one root: half and three quarters of its trim level, and 64 MiB below it whatever the
    /// share (a small quota takes no long rest).
    @Test func theReadingPaceOfOneRootAtItsThresholds() {
        let level: Int64 = 200 << 20
        #expect(Engine.readingPace(total: level / 2 - 1, trimLevel: level) == .rest)
        #expect(Engine.readingPace(total: level / 2, trimLevel: level) == .restBriefly)
        #expect(Engine.readingPace(total: level * 3 / 4 - 1, trimLevel: level) == .restBriefly)
        #expect(Engine.readingPace(total: level * 3 / 4, trimLevel: level) == .keepReading)
        #expect(Engine.readingPace(total: 0, trimLevel: 80 << 20) == .rest)
        #expect(Engine.readingPace(total: (16 << 20) + 1, trimLevel: 80 << 20) == .restBriefly)
        #expect(Engine.readingPace(total: 0, trimLevel: 40 << 20) == .restBriefly)
    }

    @Test func anOverflowRereadsTheTreeAndReportsTheDrift() throws {
        let tree = TemporaryTree()
        tree.write("a/f", size: 1_000)
        let (watcher, log, fake) = try start(tree)
        defer { watcher.stop() }
        tree.write("a/unseen", size: 4_000)
        tree.mkdir("b")
        tree.write("b/unseen", size: 2_000)
        fake.send([.overflow])
        #expect(eventually { log.names.contains("rescan") })
        let rescan = try #require(
            log.all.compactMap {
                if case .rescan(let r) = $0.kind { return r }; return nil
            }.first)
        #expect(rescan.drift == -6_000 && rescan.total == 7_000 && rescan.files == 3)
        #expect(watcher.totals()[0].total == 7_000)
        // The re-read watched the new directory too: a change there is understood.
        tree.write("b/later", size: 500)
        fake.send([.created("b/later"), .closedAfterWrite("b/later")])
        #expect(watcher.totals()[0].total == 7_500)
    }

    @Test func aDirectoryPastTheWatchLimitIsReportedOnceAndReadByItsFallback() throws {
        let tree = TemporaryTree()
        tree.write("ok/f", size: 100)
        let (watcher, log, fake) = try start(tree, refuse: { $0 == "blind" })
        defer { watcher.stop() }
        tree.write("blind/first", size: 1_000)
        fake.send([.created("blind", isDirectory: true)])
        let limitLines = {
            log.all.filter {
                if case .error(let e) = $0.kind { return e.kind == "watch_limit" }; return false
            }.count
        }
        #expect(eventually { limitLines() == 1 })
        #expect(watcher.totals()[0].total == 1_100)
        tree.write("blind/second", size: 50) // no watch there: seen only when a polling pass re-reads it
        #expect(watcher.totals()[0].total == 1_100)
        fake.send([.rereadFallbacks])
        #expect(watcher.totals()[0].total == 1_150)
        watcher.stop() // every event delivered
        #expect(limitLines() == 1, "still past the limit: not reported again")
    }

    @Test func theRootGoingAwayIsReportedAndNothingIsCounted() throws {
        let tree = TemporaryTree()
        tree.write("f", size: 1_000)
        let (watcher, log, fake) = try start(tree)
        defer { watcher.stop() }
        fake.send([.directoryGone("")])
        #expect(
            eventually {
                log.all.contains {
                    if case .error(let e) = $0.kind { return e.kind == "root_lost" }; return false
                }
            })
        #expect(watcher.totals()[0].total == 0)
    }

    /// Each try of a trim waiting for a client's lock opens the lock file (read-write where it may), and inotify
    /// reports that open and its close like a client's. They are no activity: `trim_after_idle` does not begin
    /// again at every try (which forgot the wait and made a new `deferred` line each minute), and the wait goes
    /// past `client_lock_wait`. A client's use of the cache is.
    @Test func opensOfAClientsLockFileAreNoActivity() throws {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        for i in 0..<10 { tree.write("f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        let holder = HeldByTest(tree.url(".lock"))
        defer { holder.release() }
        let clock = ManualClock()
        let (watcher, log, fake) = try start(tree, quota: 50_000, clock: clock, lockWait: 120) { dir in
            dir.order = .opened
            dir.trimAfterIdle = 60
            dir.clientLock = ClientLocks([ClientLock(".lock")])
        }
        defer { watcher.stop() }
        #expect(eventually { log.deferrals.count == 1 }) // events reach the log on its own queue
        for _ in 0..<6 {
            clock.advance(by: 30) // tries, each opening `.lock`: what inotify then reports
            fake.send([.opened(".lock"), .closedAfterWrite(".lock"), .opened(".lock"), .closed(".lock")])
        }
        let active = { watcher.engine.queue.sync { watcher.engine.state.lastActivity.isEmpty == false } }
        #expect(eventually { !log.errors.isEmpty }, "the wait never went past client_lock_wait")
        #expect(!active() && log.deferrals.count == 1, "\(log.deferrals)")
        #expect(log.errors.map(\.kind) == ["client_lock_wait"] && log.evictions.isEmpty, "\(log.errors)")
        fake.send([.opened("f9"), .closed("f9")])
        #expect(active(), "a client's open of a cached file is activity")
    }
}
