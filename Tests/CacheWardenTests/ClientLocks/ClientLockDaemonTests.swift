import Foundation
import Glibc
import Testing
import CacheWardenService

/// The daemon and the commands while a cache's client holds its lock: `trim` and `clear` wait saying so (or give
/// up with `--no-wait`, `--timeout`), the socket's refusal carries the holder, and `status`, the event lines and the
/// metrics file show the waiting trim. Real `cachewarden` processes, a real `flock(1)` holder.
@Suite(.serialized) struct ClientLockDaemonTests {
    private func json(_ text: some StringProtocol) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    @Test func trimAndClearWaitSayingSoOrGiveUp() throws {
        let tree = TemporaryTree()
        tree.write("cache/.lock", size: 0)
        for i in 0..<5 { tree.write("cache/f\(i)", size: 10_000) }
        let daemon = try DaemonCLITests.RunningDaemon(tree, extra: "dir.cache.client_lock = .lock\n")
        let socket = ["--control-socket", daemon.socket]
        var holder = try LockHolderProcess.flock(tree.url("cache/.lock"))
        let held = "the client's lock .lock of cache is held by pid \(holder.pid) (sleep)"

        let noWait = try daemon.run(["trim", "cache", "--to", "0", "--no-wait"] + socket)
        #expect(
            noWait.status == 1 && noWait.out.isEmpty
                && noWait.err == "cachewarden: trim cache: \(held); not waiting (--no-wait), nothing deleted\n",
            "\(noWait)")
        let start = Date()
        let timeout = try daemon.run(["trim", "cache", "--to", "0", "--timeout", "1"] + socket)
        #expect(timeout.status == 1 && Date().timeIntervalSince(start) >= 1, "\(timeout)")
        #expect(
            timeout.err.split(separator: "\n") == [
                "cachewarden: trim cache: waiting: \(held); at most 1 s (--no-wait or --timeout to give up)",
                "cachewarden: trim cache: gave up after 1 s: \(held); nothing deleted",
            ], "\(timeout.err)")
        // The socket's refusal says who holds the lock, and how long the daemon's own trims would wait.
        let client = try #require(try ControlClient(path: daemon.socket))
        let reply = try client.request(["command": "trim", "dir": "cache", "to": 0])
        let busy = reply["busy"]?.object ?? [:]
        #expect(
            reply["ok"]?.bool == false && busy["dir"]?.string == "cache" && busy["lock"]?.string == ".lock"
                && busy["why"]?.string == "held"
                && busy["pid"]?.integer == Int64(holder.pid) && busy["wait_limit_s"]?.integer == 3600, "\(reply)")
        // status shows the request's wait, with the holder.
        let status = try daemon.run(["status", "--json"] + socket)
        let deferred = json(status.out)?["deferred"] as? [String: Any]
        #expect(
            deferred?["reason"] as? String == "manual" && deferred?["pid"] as? Int == Int(holder.pid)
                && json(status.out)?["client_lock"] as? String == ".lock",
            "\(status.out)")

        // A trim that waits: once the holder is gone it runs, and says it waited once.
        let waiting = try RunningCLI(["trim", "cache", "--to", "0"] + socket)
        #expect(eventually { waiting.stderr.contains("waiting: ") }, "\(waiting.stderr)")
        holder.release()
        waiting.process.waitUntilExit()
        _ = eventually { json(waiting.stdout) != nil } // the pipe is read by a handler of its own
        #expect(
            waiting.process.terminationStatus == 0 && json(waiting.stdout)?["removed"] as? Int == 5,
            "\(waiting.stdout)\(waiting.stderr)")
        #expect(waiting.stderr.split(separator: "\n").count == 1)
        // So does a clear.
        tree.write("cache/g", size: 10_000)
        holder = try LockHolderProcess.flock(tree.url("cache/.lock"))
        let clearing = try RunningCLI(["clear"] + socket)
        #expect(
            eventually {
                clearing.stderr.contains(
                    "cachewarden: clear: waiting: the client's lock .lock of cache is held by pid \(holder.pid)")
            },
            "\(clearing.stderr)")
        #expect(tree.exists("cache/g"))
        holder.release()
        clearing.process.waitUntilExit()
        _ = eventually { json(clearing.stdout) != nil }
        #expect(
            clearing.process.terminationStatus == 0 && json(clearing.stdout)?["removed"] as? Int == 1,
            "\(clearing.stdout)")
        #expect(tree.exists("cache/.lock") && !tree.exists("cache/g"))
        // One `deferred` line per request that waited, however often it asked.
        let lines = daemon.cli.lines.filter { $0.contains("\"event\":\"deferred\"") }.compactMap(json)
        #expect(lines.map { $0["reason"] as? String } == ["manual", "clear"], "\(lines)")
        #expect(daemon.cli.interrupt() == 0)
    }

    @Test func aQuotaTrimWaitsAndStatusEventsAndMetricsShowIt() throws {
        let tree = TemporaryTree()
        tree.write("cache/.lock", size: 0)
        let holder = try LockHolderProcess.flock(tree.url("cache/.lock"))
        let daemon = try DaemonCLITests.RunningDaemon(
            tree, extra: "dir.cache.client_lock = .lock\nmetrics_file = cw.prom\nmetrics_interval = 1s\n")
        let socket = ["--control-socket", daemon.socket]
        for i in 0..<12 { tree.write("cache/f\(i)", size: 100_000) } // 1.2 MB, over the 1 MB quota
        #expect(
            eventually { daemon.cli.lines.contains { $0.contains("\"event\":\"deferred\"") } }, "\(daemon.cli.stdout)")
        let line = daemon.cli.lines.first { $0.contains("\"event\":\"deferred\"") } ?? ""
        let event = try #require(json(line))
        #expect(
            event["reason"] as? String == "quota" && event["pid"] as? Int == Int(holder.pid)
                && event["retry_s"] as? Int == 1
                && event["command"] as? String == "sleep", "\(line)")
        let table = try daemon.run(["status"] + socket)
        #expect(
            table.out.contains("cache: quota trim deferred for ")
                && table.out.contains("is held by pid \(holder.pid) (sleep)"), "\(table.out)")
        var prom = ""
        #expect(
            eventually {
                prom = (try? String(contentsOfFile: tree.url("cw.prom"), encoding: .utf8)) ?? ""
                return prom.contains("cachewarden_trims_deferred_total{dir=\"cache\",reason=\"quota\"} 1")
                    && prom.contains("cachewarden_client_lock_overdue{dir=\"cache\"} 0")
                    && prom.contains("cachewarden_errors_total{kind=\"client_lock_wait\"} 0")
                    && (Self.gauge(prom, "cachewarden_trim_deferred_seconds{dir=\"cache\"}") ?? 0) > 0
            }, "\(prom)")
        #expect(diskTotals(tree.url("cache")).files == 13, "a file was deleted while the client held its lock")
        holder.release()
        // The next try (back-off: 1, 2, 4 … s) runs the trim.
        #expect(
            eventually(timeout: 70) { daemon.cli.lines.contains { $0.contains("\"event\":\"trim\"") } },
            "\(daemon.cli.stdout)")
        #expect(
            eventually {
                Self.gauge(
                    (try? String(contentsOfFile: tree.url("cw.prom"), encoding: .utf8)) ?? "",
                    "cachewarden_trim_deferred_seconds{dir=\"cache\"}") == 0
            })
        #expect(daemon.cli.interrupt() == 0)
    }

    @Test func aClearWithoutADaemonWaitsForTheLockToo() throws {
        let tree = TemporaryTree()
        tree.write("cache/.lock", size: 0)
        for i in 0..<3 { tree.write("cache/f\(i)", size: 10_000) }
        try "dir.cache.path = cache\ndir.cache.client_lock = .lock\n".write(
            toFile: tree.url("c.conf"), atomically: true, encoding: .utf8)
        let holder = try LockHolderProcess.flock(tree.url("cache/.lock"))
        let refused = try runProcess(
            cachewardenBinary(), ["clear", "-c", tree.url("c.conf"), "--no-wait"],
            environment: ["RUNTIME_DIRECTORY": nil])
        #expect(
            refused.status == 1
                && refused.err.contains("clear: the client's lock .lock of cache is held by pid \(holder.pid)")
                && refused.out.isEmpty, "\(refused)")
        let clearing = try RunningCLI(["clear", "-c", tree.url("c.conf")], environment: ["RUNTIME_DIRECTORY": nil])
        #expect(eventually { clearing.stderr.contains("clear: waiting: ") }, "\(clearing.stderr)")
        #expect(diskTotals(tree.url("cache")).files == 4)
        holder.release()
        clearing.process.waitUntilExit()
        _ = eventually { clearing.stdout.contains("\"phase\":\"done\"") }
        #expect(
            clearing.process.terminationStatus == 0 && clearing.stdout.contains("\"phase\":\"done\""),
            "\(clearing.stdout)\(clearing.stderr)")
        #expect(diskTotals(tree.url("cache")).files == 1 && tree.exists("cache/.lock"))
    }

    /// The value of one sample line of an exposition text.
    static func gauge(_ text: String, _ sample: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }
}
