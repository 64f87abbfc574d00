import Foundation
import Glibc
import Testing
@testable import CacheWardenService

/// The command line against a running `cachewarden run`: `status` from memory (and its fallback), `trim`,
/// `clear`, `reload`, `events`, `--version`, and the socket's life with the process.
@Suite struct DaemonCLITests {
    /// A config with a control socket in the test's tree, and the daemon running it.
    final class RunningDaemon: Sendable {
        let tree: TemporaryTree
        let config: String
        let socket: String
        let cli: RunningCLI

        /// `descriptorLimit`: the daemon runs under `ulimit -n` (a shell sets it and execs the daemon). `ready`: wait
        /// for its `ready` line and socket (else only started).
        init(
            _ tree: TemporaryTree, extra: String = "", environment: [String: String?] = [:],
            descriptorLimit: Int? = nil, ready: Bool = true
        ) throws {
            self.tree = tree
            tree.mkdir("cache")
            config = tree.url("cw.conf")
            socket = tree.url("cw.sock")
            try "control_socket = cw.sock\ndir.cache.path = cache\ndir.cache.quota = 1MB\n\(extra)"
                .write(toFile: config, atomically: true, encoding: .utf8)
            if let descriptorLimit {
                cli = try RunningCLI(
                    [
                        "-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", cachewardenBinary(), "run", "-c",
                        config,
                    ],
                    executable: "/bin/sh", environment: environment)
            } else {
                cli = try RunningCLI(["run", "-c", config], environment: environment)
            }
            guard ready else { return }
            #expect(eventually { isReady && tree.exists("cw.sock") }, "not ready: \(cli.stderr)")
        }

        var isReady: Bool { cli.lines.contains { $0.contains("\"event\":\"ready\"") } }

        func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            try runProcess(cachewardenBinary(), args)
        }
    }

    private func json(_ line: Substring) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    @Test func statusComesFromTheDaemonAndFallsBackToAScanWhenNoneAnswers() throws {
        let tree = TemporaryTree()
        for i in 0..<30 { tree.write("cache/f\(i)", size: 7000) }
        let daemon = try RunningDaemon(tree)
        let viaDaemon = try daemon.run(["status", "-c", daemon.config, "--json"])
        #expect(viaDaemon.status == 0 && viaDaemon.err.isEmpty, "\(viaDaemon.err)")
        let live = try #require(viaDaemon.out.split(separator: "\n").first.flatMap(json))
        #expect(live["total"] as? Int == Int(diskTotals(tree.url("cache")).total) && live["files"] as? Int == 30)
        #expect(live["watches"] as? Int == 1, "only the daemon knows its watches")
        let table = try daemon.run(["status", "--control-socket", daemon.socket])
        #expect(table.status == 0 && table.out.contains("cache") && table.out.contains("30"), "\(table)")

        #expect(daemon.cli.interrupt() == 0)
        #expect(!tree.exists("cw.sock"), "the socket outlived the daemon")
        let scanned = try daemon.run(["status", "-c", daemon.config, "--json"])
        #expect(scanned.status == 0)
        #expect(
            scanned.err.split(separator: "\n").count == 1
                && scanned.err.contains("no daemon answers on \(daemon.socket)"), "\(scanned.err)")
        let scan = try #require(scanned.out.split(separator: "\n").first.flatMap(json))
        #expect(scan["total"] as? Int == live["total"] as? Int && scan["watches"] == nil)
        let nothing = try daemon.run(["status", "--control-socket", daemon.socket])
        #expect(nothing.status == 1 && nothing.err.contains("give --config FILE or --dir PATH"), "\(nothing)")
    }

    @Test func trimClearAndReloadGoThroughTheDaemon() throws {
        let tree = TemporaryTree()
        for i in 0..<20 { tree.write("cache/f\(i)", size: 10_000, mtime: 1_700_000_000 + Double(i)) }
        let daemon = try RunningDaemon(tree)
        let per = diskTotals(tree.url("cache")).total / 20
        let trim = try daemon.run(["trim", "cache", "--to", "\(per * 15)B", "-c", daemon.config])
        #expect(trim.status == 0, "\(trim.err)")
        let report = try #require(trim.out.split(separator: "\n").first.flatMap(json))
        #expect(report["removed"] as? Int == 5 && !tree.exists("cache/f4") && tree.exists("cache/f5"))
        // The reply comes on the socket; the daemon's stdout reaches the test a moment later, through a pipe.
        let evicts = { daemon.cli.lines.filter { $0.contains("\"event\":\"evict\"") }.count }
        #expect(eventually { evicts() >= 5 } && evicts() == 5, "the daemon's stream tells the same: \(evicts())")

        let unknown = try daemon.run(["trim", "nope", "-c", daemon.config])
        #expect(unknown.status == 2 && unknown.err.contains("no registered directory is named nope"), "\(unknown)")
        let badSize = try daemon.run(["trim", "cache", "--to", "lots", "-c", daemon.config])
        #expect(badSize.status == 2 && badSize.err.contains("--to"), "\(badSize)")

        let dry = try daemon.run(["clear", "--dry-run", "-c", daemon.config])
        #expect(dry.status == 0 && json(dry.out.split(separator: "\n")[0])?["removed"] as? Int == 15)
        #expect(diskTotals(tree.url("cache")).files == 15)

        // A bad file: the reply names file and line, the daemon keeps its settings; a good one is applied.
        try "control_socket = cw.sock\ndir.cache.path = cache\ndir.cache.quota = lots\n".write(
            toFile: daemon.config, atomically: true, encoding: .utf8)
        let bad = try daemon.run(["reload", "-c", daemon.config])
        #expect(bad.status == 2 && bad.err.contains("cw.conf:3") && bad.err.split(separator: "\n").count == 1, "\(bad)")
        try "control_socket = cw.sock\ndir.cache.path = cache\ndir.cache.quota = 100KB\n".write(
            toFile: daemon.config, atomically: true, encoding: .utf8)
        let good = try daemon.run(["reload", "-c", daemon.config])
        #expect(good.status == 0, "\(good)")
        #expect(eventually { diskTotals(tree.url("cache")).total <= 100_000 }, "the lowered quota was not enforced")
        #expect(daemon.cli.interrupt() == 0)
    }

    @Test func eventsIsASecondConsumerOfTheSameStream() throws {
        let tree = TemporaryTree()
        let daemon = try RunningDaemon(tree)
        let events = try RunningCLI(["events", "-c", daemon.config, "--filter", "trim,evict"])
        #expect(eventually { daemon.cli.stderr.isEmpty && events.process.isRunning })
        // The subscription is in place once a line written now reaches it: poll with a file until it does.
        var i = 0
        #expect(
            eventually {
                tree.write("cache/w\(i)", size: 100_000)
                i += 1
                return events.lines.contains { $0.contains("\"event\":\"trim\"") }
            })
        #expect(daemon.cli.interrupt() == 0)
        events.process.waitUntilExit()
        #expect(events.process.terminationStatus == 0, "events: \(events.stderr)")
        let mine = events.lines
        #expect(
            !mine.isEmpty && mine.allSatisfy { $0.contains("\"event\":\"trim\"") || $0.contains("\"event\":\"evict\"") }
        )
        let daemons = daemon.cli.lines.filter {
            $0.contains("\"event\":\"trim\"") || $0.contains("\"event\":\"evict\"")
        }
        #expect(daemons.suffix(mine.count).elementsEqual(mine), "the same lines, in the same order")

        let badFilter = try runProcess(cachewardenBinary(), ["events", "--filter", "trim,boom", "-c", daemon.config])
        #expect(badFilter.status == 2 && badFilter.err.contains("boom"))
        let noDaemon = try runProcess(cachewardenBinary(), ["events", "-c", daemon.config])
        #expect(noDaemon.status == 1 && noDaemon.err.contains("no daemon answers"), "\(noDaemon)")
    }

    @Test func aSecondDaemonOnTheSameSocketFailsAtOnceAndTheFirstKeepsIt() throws {
        let tree = TemporaryTree()
        let first = try RunningDaemon(tree)
        let second = try runProcess(cachewardenBinary(), ["run", "-c", first.config])
        #expect(second.status == 1 && second.err.contains("another daemon answers") && second.out.isEmpty, "\(second)")
        #expect(try first.run(["status", "-c", first.config, "--json"]).status == 0)
        #expect(first.cli.interrupt() == 0)
    }

    /// A socket this user may not connect to (root's, mode 0600, in a folder anyone may enter; the user is nobody)
    /// is "permission denied" with its path and exit 1, not "no daemon answers"; `clear` then deletes nothing, and
    /// `status` with a config scans it, saying why.
    @Test(.enabled(if: AsNobody.unavailable == nil, "needs root, setpriv and a binary user nobody can run"))
    func aSocketThisUserMayNotUseIsPermissionDeniedNotNoDaemon() throws {
        let tree = TemporaryTree()
        #expect(chmod(tree.path, 0o755) == 0)
        for i in 0..<5 { tree.write("cache/f\(i)", size: 10_000) }
        let daemon = try RunningDaemon(tree)
        let user = try AsNobody()
        let denied = "cachewarden: permission denied on \(daemon.socket): "
        for args in [["trim", "cache"], ["reload"], ["events"], ["status"], ["clear"]] {
            let r = try user.run(args + ["--control-socket", daemon.socket])
            #expect(
                r.status == 1 && r.err.hasPrefix(denied) && r.err.split(separator: "\n").count == 1 && r.out.isEmpty,
                "\(args): \(r)")
        }
        let clear = try user.run(["clear", "-c", daemon.config])
        #expect(clear.status == 1 && clear.err.hasPrefix(denied) && clear.out.isEmpty, "\(clear)")
        #expect(diskTotals(tree.url("cache")).files == 5, "clear deleted files beside the daemon")
        let status = try user.run(["status", "-c", daemon.config, "--json"])
        #expect(
            status.status == 0 && status.err.hasPrefix(denied)
                && status.err.contains("; scanning the directories instead"), "\(status)")
        #expect(status.out.split(separator: "\n").first.flatMap(json)?["files"] as? Int == 5, "\(status.out)")
        #expect(daemon.cli.interrupt() == 0)
    }

    @Test func versionIsPrintedByTheFlagAndByCheck() throws {
        let flag = try runProcess(cachewardenBinary(), ["--version"])
        #expect(
            flag.status == 0
                && flag.out.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
        let tree = TemporaryTree()
        tree.mkdir("c")
        try "dir.c.path = c\n".write(toFile: tree.url("w.conf"), atomically: true, encoding: .utf8)
        let check = try runProcess(cachewardenBinary(), ["check", "-c", tree.url("w.conf")])
        #expect(check.out.hasPrefix("# cachewarden \(flag.out.trimmingCharacters(in: .whitespacesAndNewlines))"))
    }
}
