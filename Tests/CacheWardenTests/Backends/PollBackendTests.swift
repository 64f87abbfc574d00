import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The polling backend on a local folder (what it does does not depend on the filesystem; `BindfsMountTests`
/// runs it where inotify is blind): changes are seen within an interval, a file growing in place by the full
/// pass, `status` names the backend and the pass's cost, and `auto` keeps inotify on a local filesystem.
@Suite struct PollBackendTests {
    static func polled(_ tree: TemporaryTree, quota: Int64 = 0) throws -> WatcherHarness {
        try WatcherHarness(tree, quota: quota, basis: .apparent) {
            $0.backend = .poll; $0.pollInterval = 1
        }
    }

    @Test func aChangeIsSeenWithinOneInterval() throws {
        let tree = TemporaryTree()
        tree.write("a/old", size: 1_000, mtime: 1_000_000)
        let h = try Self.polled(tree)
        #expect(h.total == 1_000)
        let written = Date()
        tree.write("a/new", size: 4_000)
        tree.write("b/c/deep", size: 2_000)
        try FileManager.default.removeItem(atPath: tree.url("a/old"))
        #expect(h.totalsMatchDisk(basis: .apparent, timeout: 5))
        let seen = Date().timeIntervalSince(written)
        print("poll: changes seen after \(String(format: "%.2f", seen)) s (interval 1 s)")
        #expect(seen < 4, "seen after \(seen) s: more than the interval, a pass and a loaded machine's slack")
        #expect(h.total == 6_000 && h.files == 2)
        // Files a pass finds are announced like inotify's writes.
        #expect(eventually { Set(h.log.writes.map(\.file)) == ["a/new", "b/c/deep"] })
    }

    @Test func aFileGrowingInPlaceInAQuietDirectoryIsSeenByTheFullPass() throws {
        let tree = TemporaryTree()
        tree.write("quiet/f", size: 1_000, mtime: 1_000_000)
        tree.setMtime("quiet", 1_000_000)
        let h = try Self.polled(tree)
        // Setting the times moved the ctime: the directory is re-read until it has been quiet for an interval and
        // the timestamp slack. Then passes read nothing.
        #expect(eventually(timeout: 15) { h.watcher.status().first?.pollPass?.directoriesRead == 0 })
        let appended = Date()
        tree.append("quiet/f", size: 3_000) // the directory's times do not move
        #expect(h.totalsMatchDisk(basis: .apparent, timeout: Double(PollBackend.fullPassEvery) + 5))
        print(
            "poll: an append in place seen after \(String(format: "%.2f", Date().timeIntervalSince(appended))) s (full pass every \(PollBackend.fullPassEvery))"
        )
        #expect(h.total == 4_000)
    }

    @Test func statusNamesTheBackendAndWhatThePassCost() throws {
        let tree = TemporaryTree()
        for i in 0..<20 { tree.write("d\(i)/f", size: 100) }
        let h = try Self.polled(tree)
        tree.write("d3/g", size: 100)
        #expect(eventually(timeout: 5) { h.watcher.status().first?.pollPass?.directoriesRead ?? 0 > 0 })
        let s = try #require(h.watcher.status().first)
        #expect(s.backend == "poll" && s.watches == nil)
        let pass = try #require(s.pollPass)
        #expect(pass.directoriesChecked == 21 && pass.seconds > 0)
        #expect(s.jsonLine().contains("\"backend\":\"poll\""))
        #expect(s.jsonLine().contains("\"poll_dirs_read\":"))
        // A local filesystem under `auto` stays on inotify.
        let local = try WatcherHarness(TemporaryTree())
        #expect(local.watcher.status().first?.backend == "inotify")
    }

    @Test func backendKeysParse() throws {
        let dir = TemporaryTree()
        let text =
            "backend = poll\npoll_interval = 1m\ndir.a.path = \(dir.path)\ndir.a.backend = auto\ndir.a.poll_interval = 5s\n"
        let s = try WardenSettings.parse(text, source: "t.conf", relativeTo: nil)
        #expect(s.backend == .poll && s.pollInterval == 60)
        #expect(s.directories[0].backend == .auto && s.directories[0].pollInterval == 5)
        #expect(
            try WardenSettings.parse(
                "backend = fanotify\ndir.a.path = \(dir.path)\n", source: "t.conf", relativeTo: nil
            ).backend == .fanotify)
        do {
            _ = try WardenSettings.parse(
                "backend = dnotify\ndir.a.path = \(dir.path)\n", source: "t.conf", relativeTo: nil)
            Issue.record("dnotify was accepted")
        } catch {
            #expect(
                error.description
                    == "t.conf:1: bad value `dnotify` for backend: expected auto, inotify, fanotify or poll", "\(error)"
            )
        }
    }

    @Test func theAutoRuleTellsNetworkAndFuseFilesystemsByTheirMagic() {
        #expect(BackendSelection.polledFilesystems[0x6969] == "nfs")
        #expect(BackendSelection.polledFilesystems[0x6573_5546] == "fuse")
        let auto = BackendSelection.resolve(.auto, path: "/tmp", fanotifyProblem: nil)
        #expect(auto.kind == .inotify && auto.pastLimit == .fanotify)
        #expect(BackendSelection.resolve(.auto, path: "/tmp", fanotifyProblem: "no privilege").pastLimit == .poll)
        #expect(BackendSelection.resolve(.inotify, path: "/tmp", fanotifyProblem: nil).pastLimit == .poll)
        #expect(BackendSelection.resolve(.poll, path: "/tmp", fanotifyProblem: nil).kind == .poll)
        #expect(BackendSelection.resolve(.fanotify, path: "/tmp", fanotifyProblem: nil).kind == .fanotify)
    }
}
