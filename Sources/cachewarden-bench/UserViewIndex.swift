import Foundation
import Glibc

/// The index as a user sees it: `cachewarden run --dir ROOT` launched as a whole process (the CLI binary, as
/// installed) and timed from launch to its `ready` line on stdout, in the same loop as `du -s ROOT` — each pair
/// back to back, so whatever the host does to one it does to the other — and its resident set after `ready` less
/// an idle `cachewarden run`'s on an empty folder, per file. The quota is set (never reached) so the watcher keeps
/// its files in oldest-first order, as a cache with a quota does.
struct UserViewIndex: Sendable {
    /// Launch → `ready` seconds, and `du -s` seconds right after, per run.
    var pairs: [(cachewarden: Double, du: Double)]
    /// `VmRSS` of the watcher after `ready`, per run.
    var rssAfterReady: [Int64]
    /// `VmRSS` of an idle watcher on an empty folder after its `ready`.
    var idleRSS: Int64
    var files: Int

    /// Median of the per-pair ratios (pairing cancels the host's drift between runs).
    var ratioToDu: Double { Stats.median(pairs.map { $0.cachewarden / max($0.du, 1e-9) }) }
    var cachewardenMedian: Double { Stats.median(pairs.map(\.cachewarden)) }
    var duMedian: Double { Stats.median(pairs.map(\.du)) }
    /// RSS after `ready` above an idle watcher's, per file.
    var bytesPerFile: Double {
        files > 0 ? (Stats.median(rssAfterReady.map(Double.init)) - Double(idleRSS)) / Double(files) : 0
    }

    static func measure(root: String, files: Int, runs: Int, env: Environment, work: String) throws -> UserViewIndex {
        guard let cli = env.cli, let du = env.du else { throw BenchError("needs the cachewarden CLI and du") }
        let empty = "\(work)/index-empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { Files.discard(empty) }
        let idle = try launchToReady(cli, empty).rss
        _ = try runToEnd(du, ["-s", root]) // warm-up: both read a warm tree
        var pairs: [(Double, Double)] = []
        var rss: [Int64] = []
        for _ in 0..<runs {
            let run = try launchToReady(cli, root)
            let d = try runToEnd(du, ["-s", root])
            pairs.append((run.seconds, d.seconds))
            rss.append(run.rss)
        }
        return UserViewIndex(pairs: pairs, rssAfterReady: rss, idleRSS: idle, files: files)
    }

    /// Starts `cachewarden run --dir root`, waits for its `ready` line, reads its RSS and stops it.
    private static func launchToReady(_ cli: String, _ root: String) throws -> (seconds: Double, rss: Int64) {
        let child = try Child(cli, ["run", "--dir", root, "--quota", "1000000TB"], stdout: .pipe, stderr: .null)
        defer { child.stop(signal: SIGINT) }
        var transcript = ""
        guard let at = child.waitForStdout(containing: "\"event\":\"ready\"", timeout: 600, transcript: &transcript)
        else {
            throw BenchError("cachewarden run on \(root) printed no ready line: \(transcript.prefix(300))")
        }
        return (Clock.seconds(from: child.startedAt, to: at), MemorySample.of(child.pid).rssBytes)
    }
}
