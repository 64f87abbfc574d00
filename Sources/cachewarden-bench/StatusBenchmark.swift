import CacheWarden
import CacheWardenService
import Foundation
import Glibc

/// "status of a N-file cache: socket vs rescan": a `cachewarden run` daemon on the index tree answers `status` on
/// its control socket from memory; beside it, the same question answered by `cachewarden status --scan` (a fresh
/// observe-mode scan of the tree, what an operator had before the socket).
struct StatusResult: Sendable {
    var files: Int
    /// Round trips of one `{"command":"status"}` request on an open connection, seconds.
    var request: [Double]
    /// `cachewarden status --json` (connect, ask, print), wall seconds per run.
    var cliSocket: [Double]
    /// `cachewarden status --json --scan`, wall seconds per run.
    var cliScan: [Double]
}

enum StatusBenchmark {
    static func run(
        root: String, files: Int, runs: Int, env: Environment, work: String,
        log: (String) -> Void
    ) throws -> StatusResult? {
        guard let cli = env.cli else { log("status: skipped (no cachewarden binary beside the benchmark)"); return nil }
        let config = "\(work)/status.conf"
        let socket = "\(work)/status.sock"
        try "control_socket = \(socket)\ndir.bench.path = \(root)\ndir.bench.quota = 1000TB\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Child(cli, ["run", "-c", config], stdout: .null, stderr: .inherit)
        defer { _ = daemon.stop() }
        let client = try waitForDaemon(socket, daemon: daemon)
        guard let counted = try client.status().dirs.first?.totals.files, counted == files else {
            throw BenchError("status: the daemon counted a different tree than the \(files) files built")
        }
        var request: [Double] = []
        for _ in 0..<max(20, runs) {
            let started = Clock.nanos()
            _ = try client.status()
            request.append(Clock.seconds(since: started))
        }
        var viaSocket: [Double] = []
        var viaScan: [Double] = []
        for _ in 0..<runs {
            let s = try runToEnd(cli, ["status", "--json", "-c", config])
            let r = try runToEnd(cli, ["status", "--json", "--scan", "-c", config])
            guard s.status == 0, r.status == 0, s.output.contains("\"files\":\(files)"),
                r.output.contains("\"files\":\(files)")
            else {
                throw BenchError(
                    "status: a status run failed or disagreed: \(s.output.prefix(200)) / \(r.output.prefix(200))")
            }
            viaSocket.append(s.seconds)
            viaScan.append(r.seconds)
        }
        let result = StatusResult(files: files, request: request, cliSocket: viaSocket, cliScan: viaScan)
        log(
            "status: request median \(Format.seconds(Stats.median(request))), CLI via socket \(Format.seconds(Stats.median(viaSocket))), "
                + "CLI rescan \(Format.seconds(Stats.median(viaScan)))")
        return result
    }

    /// Connects once the daemon has read the tree (its socket answers `status`), or throws after 10 minutes.
    private static func waitForDaemon(_ socket: String, daemon: Child) throws -> ControlClient {
        let deadline = Clock.nanos() + 600_000_000_000
        while Clock.nanos() < deadline {
            guard daemon.isRunning else { throw BenchError("status: the daemon exited") }
            if let client = try ControlClient(path: socket, timeout: 600), (try? client.status()) != nil {
                return client
            }
            Clock.sleep(0.05)
        }
        throw BenchError("status: no answer on \(socket) within 10 minutes")
    }
}

/// The status rows: one per tree the index section built.
struct StatusSection: BenchSection {
    var results: [StatusResult]

    var rows: [Report.Row] {
        results.flatMap { r -> [Report.Row] in
            let n = Format.shortCount(r.files)
            let scan = Stats.median(r.cliScan)
            return [
                Report.Row(
                    metric: "status \(n) files: socket request (median of \(r.request.count))",
                    cachewarden: Format.seconds(Stats.median(r.request)), peer: "rescan: \(Format.seconds(scan))",
                    ratio: Format.ratio(Stats.median(r.request), scan)),
                Report.Row(
                    metric: "status \(n) files: `cachewarden status` via socket",
                    cachewarden: Format.seconds(Stats.median(r.cliSocket)), peer: "--scan: \(Format.seconds(scan))",
                    ratio: Format.ratio(Stats.median(r.cliSocket), scan)),
            ]
        }
    }

    var jsonKey: String { "status" }

    var json: JSONValue {
        .array(
            results.map { r in
                .object([
                    ("files", .integer(r.files)),
                    ("request_s", .array(r.request.map { .number($0) })),
                    ("request_median_s", .number(Stats.median(r.request))),
                    ("request_p99_s", .number(Stats.percentile(r.request, 99))),
                    ("cli_socket_s", .array(r.cliSocket.map { .number($0) })),
                    ("cli_scan_s", .array(r.cliScan.map { .number($0) })),
                ])
            })
    }
}
