import Dispatch
import Foundation
import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// `backend = fanotify`: one mark per filesystem (per group) and no per-directory watch; renames paired across
/// directories, out of and into the tree; the events of the rest of the filesystem dropped; an overflowed queue re-read
/// and the drift reported; opens counted. The guarantee tests (`QuotaTrimTests`, `ModelBasedTotalsTests`,
/// `EvictionFactsTests`) run on it too. Where fanotify cannot be had, `backend = fanotify` stops `run` with exit 2.
@Suite struct FanotifyBackendTests {
    static let available = FanotifyGroup.unavailability == nil

    @Test(.enabled(if: available, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func oneMarkNoWatchesAndRenamesPairedAcrossDirectories() throws {
        let tree = TemporaryTree(), outside = TemporaryTree("cw-fan-out")
        tree.write("a/f", size: 1_000)
        tree.mkdir("b")
        let capture = FanotifyCapture()
        let h = try WatcherHarness(tree, basis: .apparent, backend: capture.factory) { $0.backend = .fanotify }
        let backend = try #require(capture.backend)
        // One mark per group on the one filesystem (totals, and opens for spare_open); the root, a and b followed
        // by their keys, not by kernel watches.
        #expect(backend.markCount == 2 && backend.watchCount == 3)
        #expect(h.watcher.status().first?.watches == nil && h.watcher.status().first?.backend == "fanotify")
        tree.rename("a/f", "b/g") // across directories: the same file, counted once
        tree.rename("a", "b/a2") // a directory moved inside the tree keeps its followers
        tree.write("b/a2/h", size: 500)
        #expect(h.totalsMatchDisk(basis: .apparent))
        outside.write("elsewhere", size: 7_000) // the same filesystem, not ours
        #expect(rename(tree.url("b/g"), outside.url("moved-out")) == 0)
        #expect(rename(outside.url("elsewhere"), tree.url("moved-in")) == 0)
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(h.total == 7_500)
    }

    @Test(.enabled(if: available, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func anOverflowedQueueIsReadAgainAndTheDriftReported() throws {
        let tree = TemporaryTree()
        // The shipped groups' queues are unbounded; with fanotify's default bound, an overflow can be made.
        let h = try WatcherHarness(tree, basis: .apparent, backend: FanotifyCapture(boundedQueues: true).factory) {
            $0.backend = .fanotify
        }
        // Stall the watcher's queue while more events are made than a bounded group queues.
        let limit = (try? String(contentsOfFile: "/proc/sys/fs/fanotify/max_queued_events", encoding: .utf8))
        let queued = limit.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16_384
        let gate = DispatchSemaphore(value: 0)
        h.watcher.engine.queue.async { gate.wait() }
        tree.mkdir("burst")
        for i in 0..<(queued + 4_000) {
            let fd = open(tree.url("burst/f\(i)"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = write(fd, "x", 1)
            close(fd)
        }
        gate.signal()
        #expect(eventually(timeout: 60) { h.log.names.contains("rescan") })
        #expect(h.totalsMatchDisk(basis: .apparent, timeout: 60))
        #expect(h.files == queued + 4_000)
    }

    /// fanotify merges an event into any earlier one about the same name by the same process: the write of a
    /// third `tmp` merges into the first's, queued before both renames. The old name is looked at after each rename.
    @Test(.enabled(if: available, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func aNameWrittenAgainAfterItsRenameIsCounted() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) { $0.backend = .fanotify }
        let gate = DispatchSemaphore(value: 0)
        h.watcher.engine.queue.async { gate.wait() } // nothing read until the three are queued
        for i in 0..<3 {
            tree.write("tmp", size: 1_000 + i)
            if i < 2 { tree.rename("tmp", "final\(i)") }
        }
        gate.signal()
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(h.files == 3)
    }

    /// The look at a renamed file's old name finds nothing there, as expected: no suspicion of an unseen change,
    /// so no audit (a re-stat of every file of the root) — a write-then-rename client renames all the time. Each
    /// rename is counted before the next `tmp` is written: a `tmp` made again while the last one's creation is
    /// still unread merges into that event, ahead of the rename, and the look after the rename may then rightly
    /// doubt what it finds (under a loaded test run, once in 20 renames). Likewise each `tmp` is counted before it
    /// is renamed.
    @Test(.enabled(if: available, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func renamesCostNoAudit() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) { $0.backend = .fanotify }
        for i in 0..<20 {
            tree.write("tmp", size: 100)
            // Counted before it is renamed: a creation read before the write's close and looked at only after the
            // rename finds a file never seen, gone, and rightly doubts (once in a loaded full run). The look at
            // the old name after a rename is what this test is about.
            #expect(eventually { h.watcher.ledgerFiles(h.name)["tmp"]?.bytes == 100 })
            tree.rename("tmp", "entry\(i)")
            #expect(
                eventually {
                    h.watcher.ledgerFiles(h.name)["entry\(i)"] != nil && h.watcher.ledgerFiles(h.name)["tmp"] == nil
                })
        }
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(h.files == 20)
        let engine = h.watcher.engine
        #expect(engine.queue.sync { engine.audits.last.isEmpty && engine.audits.pending.isEmpty })
    }

    @Test(.enabled(if: available, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func aRootMovedAwayIsLost() throws {
        let parent = TemporaryTree()
        parent.write("cache/f", size: 100)
        let log = EventLog()
        var dir = DirectorySettings(name: "c", path: parent.url("cache"))
        dir.backend = .fanotify
        let watcher = Watcher(settings: WardenSettings(directories: [dir]), clock: SystemClock(), log: log)
        try watcher.start()
        defer { watcher.stop() }
        parent.rename("cache", "elsewhere")
        #expect(
            eventually {
                log.all.contains {
                    if case .error(let e) = $0.kind { return e.kind == "root_lost" }; return false
                }
            })
        #expect(watcher.totals()[0].total == 0)
    }

    @Test(.enabled(if: available, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func opensAreCountedForSpareOpen() throws {
        let tree = TemporaryTree()
        for i in 0..<4 { tree.write("f\(i)", size: 10_000, mtime: 1_600_000_000 + Double(i)) }
        let h = try WatcherHarness(tree, quota: 45_000, basis: .apparent) {
            $0.backend = .fanotify; $0.spareOpen = true
        }
        let fd = open(tree.url("f0"), O_RDONLY) // the oldest, held open by a reader
        defer { close(fd) }
        let engine = h.watcher.engine
        #expect(
            eventually {
                engine.queue.sync {
                    let root = engine.state.ledger.account(RootID(0))!.rootNode
                    return Array("f0".utf8).withUnsafeBytes { engine.state.ledger.existingRecord(in: root, named: $0) }
                        .map { engine.state.ledger.isOpen($0) } ?? false
                }
            })
        tree.write("new", size: 10_000) // 50,000 > 45,000: trim to ≤ 22,500, sparing f0
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(
            tree.exists("f0") && !tree.exists("f1") && !tree.exists("f2") && !tree.exists("f3") && tree.exists("new"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test(.enabled(if: getuid() == 0 && which("setpriv") != nil, "needs root and setpriv to run as another user"))
    func askingForFanotifyWithoutThePrivilegeStopsRunWithExit2() throws {
        let tree = TemporaryTree()
        tree.write("c/f", size: 100)
        _ = chmod(tree.path, 0o755)
        _ = chmod(tree.url("c"), 0o777)
        let config = tree.url("cw.conf")
        try "dir.c.path = \(tree.url("c"))\ndir.c.backend = fanotify\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        _ = chmod(config, 0o644)
        let setpriv = try #require(which("setpriv"))
        #expect(access(cachewardenBinary(), X_OK) == 0, "no \(cachewardenBinary()) to run")
        let r = try runProcess(
            setpriv,
            ["--reuid=65534", "--regid=65534", "--clear-groups", "--", cachewardenBinary(), "run", "--config", config])
        #expect(r.status == 2, "\(r)")
        #expect(
            r.err.split(separator: "\n").count == 1 && r.err.contains("dir.c: backend = fanotify, but")
                && r.err.contains("CAP_SYS_ADMIN"), "\(r.err)")
        #expect(tree.exists("c/f"))
    }
}

/// The fanotify backend's factory (with fanotify's default queue bound, where a test needs an overflow), keeping
/// the backend it made.
final class FanotifyCapture: @unchecked Sendable {
    private(set) var backend: FanotifyBackend?
    let boundedQueues: Bool

    init(boundedQueues: Bool = false) {
        self.boundedQueues = boundedQueues
    }

    var factory: BackendFactory {
        BackendFactory { queue, logger, clock throws(WardenError) in
            let fanotify = FanotifyBackend(queue: queue, logger: logger, boundedQueues: self.boundedQueues)
            self.backend = fanotify
            let inotify = try InotifyBackend(queue: queue, logger: logger)
            return RoutingBackend(inotify: inotify, fanotify: fanotify, poll: PollBackend(queue: queue, clock: clock))
        }
    }
}
