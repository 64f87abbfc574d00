import Foundation
import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import CacheWarden

/// A directory inotify cannot watch because `fs.inotify.max_user_watches` is reached is never blind: `auto` hands
/// it to fanotify where this process may mark filesystems, else to polling (`RoutingBackend`), with one
/// `watch_limit` line per root naming what serves it; totals stay exact and quota trims work across the boundary.
/// The limit is injected in-process (`ENOSPC` for chosen paths) and, in the last test, real: lowered for a user
/// namespace of the test's own, so no other process is affected.
@Suite struct WatchLimitFallbackTests {
    static func limitLines(_ log: EventLog) -> [WardenEvent] {
        log.all.filter {
            if case .error(let e) = $0.kind { return e.kind == "watch_limit" }; return false
        }
    }

    @Test func withoutFanotifyADirectoryPastTheLimitIsPolled() throws {
        let tree = TemporaryTree()
        let log = EventLog(), clock = ManualClock()
        var dir = DirectorySettings(name: "c", path: tree.path)
        dir.pollInterval = 60
        let watcher = Watcher(
            settings: WardenSettings(directories: [dir], sizeBasis: .apparent),
            backend: .standard(addWatchOverride: { $0.hasSuffix("/blind") ? Errno.noSpace : nil }, fanotify: false),
            clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        tree.write("blind/first", size: 100)
        #expect(eventually { Self.limitLines(log).count == 1 })
        // The scan of `blind` may have run before `first` was written in it: the first polling pass counts it.
        clock.advance(by: 60)
        #expect(watcher.totals()[0].total == 100)
        tree.write("blind/second", size: 50) // no inotify watch there: seen only by the next polling pass
        tree.remove("blind/first")
        clock.advance(by: 59.9)
        #expect(watcher.totals()[0].total == 100, "polled before its interval")
        clock.advance(by: 0.1)
        #expect(watcher.totals()[0].total == 50)
        let line = try #require(Self.limitLines(log).first).jsonLine()
        #expect(
            Self.limitLines(log).count == 1 && line.contains("max_user_watches") && line.contains("served by poll"),
            "\(line)")
        let status = try #require(watcher.status().first)
        #expect(status.backend == "inotify" && status.polledDirectories == 1 && status.fanotifyDirectories == 0)
    }

    /// A polled directory read again after a watch was freed is watched by inotify, and polled no more.
    @Test func aDirectoryWatchableAgainLeavesThePollingBackend() throws {
        let tree = TemporaryTree()
        let log = EventLog(), clock = ManualClock()
        let refusing = Mutex(true)
        var dir = DirectorySettings(name: "c", path: tree.path)
        dir.pollInterval = 60
        let watcher = Watcher(
            settings: WardenSettings(directories: [dir], sizeBasis: .apparent),
            backend: .standard(
                addWatchOverride: { path in
                    path.hasSuffix("/blind") && refusing.withLock { $0 } ? Errno.noSpace : nil
                }, fanotify: false),
            clock: clock, log: log)
        tree.mkdir("blind")
        try watcher.start()
        defer { watcher.stop() }
        #expect(watcher.status().first?.polledDirectories == 1)
        refusing.withLock { $0 = false }
        tree.write("blind/a", size: 100)
        clock.advance(by: 60) // the pass re-reads `blind`, and inotify watches it now
        #expect(watcher.totals()[0].total == 100)
        #expect(watcher.status().first?.polledDirectories == 0)
        tree.write("blind/b", size: 50) // seen by inotify, with no pass
        #expect(eventually { watcher.totals()[0].total == 150 })
    }

    @Test(
        .enabled(
            if: FanotifyGroup.unavailability == nil, "fanotify is not available here (root and Linux 5.9 are needed)"))
    func withFanotifyADirectoryPastTheLimitIsFollowedAndTrimmedAcrossTheBoundary() throws {
        let tree = TemporaryTree()
        let log = EventLog()
        let watcher = Watcher(
            settings: WardenSettings(
                directories: [DirectorySettings(name: "c", path: tree.path, quota: 10_000)],
                sizeBasis: .apparent),
            mode: .enforce, callbackQueue: nil, sinks: [log], logger: .init(label: "t"),
            backend: .standard(addWatchOverride: { $0.contains("/past") ? Errno.noSpace : nil }),
            clock: SystemClock(), disk: SystemDiskProbe(), handler: nil)
        tree.write("past/old", size: 3_000, mtime: 1_600_000_000)
        tree.write("watched/older", size: 3_000, mtime: 1_500_000_000)
        try watcher.start()
        defer { watcher.stop() }
        #expect(Self.limitLines(log).count == 1)
        #expect(try #require(Self.limitLines(log).first).jsonLine().contains("served by fanotify"))
        // Seen at once, with no timer: fanotify follows the directory past the limit.
        tree.write("past/deeper/new", size: 2_000)
        #expect(eventually { watcher.totals()[0].total == 8_000 })
        // Crossing the quota trims oldest first across both sides, to half the quota.
        tree.write("watched/newest", size: 3_000)
        #expect(eventually { watcher.totals()[0].total <= 5_000 })
        #expect(!tree.exists("watched/older") && !tree.exists("past/old") && tree.exists("watched/newest"))
        #expect(eventually { diskTotals(tree.path, basis: .apparent).total == watcher.totals()[0].total })
        let status = try #require(watcher.status().first)
        #expect(status.fanotifyDirectories == 2 && status.polledDirectories == 0, "past and past/deeper: \(status)")
    }

    /// `cachewarden run` in a user namespace of its own whose `max_inotify_watches` is 4: of its 12 directories, 8
    /// are past the limit. fanotify cannot mark a filesystem from a user namespace, so they are polled.
    @Test(.enabled(if: getuid() == 0 && which("unshare") != nil, "needs root and unshare"))
    func aRealLimitInAUserNamespaceIsPolledExactlyAndTrimmed() throws {
        let tree = TemporaryTree()
        for i in 0..<12 { tree.write("c/d\(i)/f", size: 1_000, mtime: 1_600_000_000 + Double(i)) }
        let config = tree.url("cw.conf")
        try "size_basis = apparent\npoll_interval = 1s\ndir.c.path = \(tree.url("c"))\ndir.c.quota = 20000\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let script = "echo 4 > /proc/sys/user/max_inotify_watches && exec \"$0\" run --config \"$1\""
        let cli = try RunningCLI(
            ["-U", "-r", "sh", "-c", script, cachewardenBinary(), config], executable: try #require(which("unshare")))
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(cli.stderr)")
        let limit = cli.lines.filter { $0.contains("\"kind\":\"watch_limit\"") }
        #expect(limit.count == 1 && limit[0].contains("served by poll"), "\(cli.lines)")
        // Directories past the limit: new files are counted by the next pass, and a crossing trims oldest first.
        for i in 0..<12 { tree.write("c/d\(i)/g", size: 1_000) }
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"trim\"") } }, "\(cli.lines.suffix(5))")
        #expect(eventually { diskTotals(tree.url("c"), basis: .apparent).total <= 10_000 })
        for i in 0..<8 { #expect(!tree.exists("c/d\(i)/f"), "the oldest go first: d\(i)/f") }
        #expect(cli.interrupt() == 0)
        let stop = try #require(cli.lines.last { $0.contains("\"event\":\"stop\"") })
        #expect(stop.contains("\"total\":\(diskTotals(tree.url("c"), basis: .apparent).total),"), "\(stop)")
    }
}
