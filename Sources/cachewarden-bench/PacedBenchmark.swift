import Foundation
import Glibc

/// One paced burst under one watcher.
struct PacedRun: Sendable {
    /// "cachewarden" or "inotifywait".
    var watcher: String
    /// The rate asked for, files a second.
    var rate: Double
    var round: Int
    var writer: BurstResult
    /// The watcher's CPU time and context switches from just before the first file to its quiet after the last.
    var activity: ProcessActivity.Reading
    /// Seconds from the writer's last `close` to the watcher's last move (CPU or switch).
    var tailSeconds: Double
    /// CacheWarden only: its `status` totals after the burst, the fresh scan, `overflow` lines.
    var watcherTotals: EventTail.Totals?
    var scan: FreshScan?
    var overflows: Int?

    /// The totals equal a fresh scan (CacheWarden; `nil` for inotifywait).
    var exact: Bool? {
        guard let scan else { return nil }
        return watcherTotals == EventTail.Totals(files: scan.files, total: scan.bytes)
    }

    private var files: Double { Double(max(1, writer.files)) }
    /// Watcher CPU microseconds per file written (its CPU clock).
    var cpuPerFile: Double { activity.cpuSeconds / files * 1e6 }
    /// The same from `/proc/PID/stat` (10 ms ticks).
    var statCPUPerFile: Double { activity.statSeconds / files * 1e6 }
    /// Watcher context switches (voluntary + involuntary) per file written.
    var switchesPerFile: Double { Double(activity.switches) / files }
    var voluntaryPerFile: Double { Double(activity.voluntary) / files }
}

/// What the paced section measured.
struct PacedResult: Sendable {
    var seconds: Double
    var rates: [Double]
    var rounds: Int
    var runs: [PacedRun] = []
    var note: String?

    /// The runs of `watcher` at `rate`, in round order.
    func runs(_ watcher: String, at rate: Double) -> [PacedRun] {
        runs.filter { $0.watcher == watcher && $0.rate == rate }.sorted { $0.round < $1.round }
    }
}

/// "paced" (issue 33): a writer creating 4 KiB files at a steady rate (400 and 4,000 a second) for a few seconds
/// into a tree watched by `cachewarden run` (the CLI child) and, in alternating turns on the same tree, by
/// `inotifywait -m -r` (all events, printed to /dev/null). At such rates the watcher wakes for a few files at a
/// time, so what it costs is mostly the cost of a wake-up: its CPU time per file (its CPU clock, to the
/// nanosecond; the 10 ms ticks of `/proc/PID/stat` beside it in the JSON) and its context switches per file
/// (`/proc/PID/task/*/status`), against inotifywait's. CacheWarden's totals are checked against a fresh scan after
/// each burst, once its figures are taken (the `status` request is not counted).
enum PacedBenchmark {
    static let rates = [400.0, 4_000.0]
    static let fileSize = 4096

    /// One burst to measure: `count` files at `rate` a second into `batch`, in round `round`.
    private struct Burst {
        var rate: Double
        var count: Int
        var round: Int
        var batch: String
    }

    static func run(seconds: Double, rounds: Int, env: Environment, work: String, log: (String) -> Void) throws
        -> PacedResult
    {
        guard let cli = env.cli else {
            throw BenchError(
                "the cachewarden CLI was not found: build it with `swift build -c release --product cachewarden` or pass --cli"
            )
        }
        var result = PacedResult(seconds: seconds, rates: rates, rounds: rounds)
        if env.inotifywait == nil { result.note = "inotifywait not installed (apt-get install inotify-tools): no peer" }
        let root = "\(work)/paced"
        try Files.makeDirectory(root)
        defer { Files.discard(root) }
        var serial = 0
        for round in 0..<rounds {
            for (k, rate) in rates.enumerated() {
                let first = (round + k) % 2 == 0
                for watcher in first ? ["cachewarden", "inotifywait"] : ["inotifywait", "cachewarden"] {
                    serial += 1
                    // Each burst writes into a folder of its own under the watched root, set aside after it.
                    let batch = "\(root)/b\(serial)"
                    try Files.makeDirectory(batch)
                    defer { Files.discard(batch) }
                    let burst = Burst(
                        rate: rate, count: max(1, Int((rate * seconds).rounded())), round: round, batch: batch)
                    let run: PacedRun
                    if watcher == "cachewarden" {
                        run = try cachewarden(cli, root: root, burst: burst, output: "\(work)/paced-\(serial).jsonl")
                    } else if let inotifywait = env.inotifywait {
                        run = try self.inotifywait(inotifywait, root: root, burst: burst)
                    } else {
                        continue
                    }
                    log(describe(run))
                    result.runs.append(run)
                }
            }
        }
        return result
    }

    /// The burst under `cachewarden run` on `root`; then its `status` against a fresh scan.
    private static func cachewarden(_ cli: String, root: String, burst: Burst, output: String) throws -> PacedRun {
        defer { Files.discard(output) }
        let child = try Child(cli, ["run", "--dir", root, "--size-basis", "apparent"], stdout: .file(output))
        defer { child.stop() }
        let tail = try EventTail(path: output)
        try tail.awaitReady(of: child, what: "paced: the watcher")
        var run = measure(pid: child.pid, watcher: "cachewarden", burst)
        // Caught up: the last burst's files are all in `status` (asked again while they are not, 10 s at most).
        let scan = tail.awaitFreshScan(of: child, root: root)
        run.watcherTotals = tail.lastStatus
        run.scan = scan
        run.overflows = tail.overflows
        return run
    }

    /// The burst under `inotifywait -m -r` on `root`.
    private static func inotifywait(_ path: String, root: String, burst: Burst) throws -> PacedRun {
        let (child, _) = try Child.inotifywait(path, ["-m", "-r", root])
        defer { child.stop(signal: SIGKILL, grace: 0) }
        return measure(pid: child.pid, watcher: "inotifywait", burst)
    }

    /// The paced burst into `batch`, with the watcher `pid`'s CPU time and switches from just before the first
    /// file (once the watcher has been quiet for 100 ms after its start) to its quiet after the last one (200 ms
    /// without a move).
    private static func measure(pid: pid_t, watcher: String, _ b: Burst) -> PacedRun {
        let activity = ProcessActivity(pid: pid)
        activity.waitUntilQuiet(0.1, limit: 5)
        let before = activity.reading()
        activity.start()
        // Never past its length: where the disk cannot follow (ext4 at 4,000/s), fewer files, the time kept.
        let burst = BurstWriter.run(
            root: b.batch, count: b.count, size: fileSize, rate: b.rate,
            limit: Double(b.count) / b.rate + 0.05)
        let lastMove = activity.waitUntilQuiet(0.2)
        activity.stop()
        let after = activity.reading()
        let spent = ProcessActivity.Reading(
            cpuSeconds: after.cpuSeconds - before.cpuSeconds,
            statSeconds: after.statSeconds - before.statSeconds,
            voluntary: after.voluntary - before.voluntary,
            involuntary: after.involuntary - before.involuntary, threads: after.threads)
        return PacedRun(
            watcher: watcher, rate: b.rate, round: b.round, writer: burst, activity: spent,
            tailSeconds: Clock.seconds(from: burst.endedAt, to: lastMove))
    }

    private static func describe(_ r: PacedRun) -> String {
        "paced: \(r.watcher) at \(Format.rate(r.rate)) files/s (writer \(Format.rate(r.writer.rate))/s, \(r.writer.files) files): "
            + "CPU \(Format.decimal(r.cpuPerFile, 1)) µs/file, \(Format.decimal(r.switchesPerFile, 2)) switches/file "
            + "(\(r.activity.voluntary) voluntary, \(r.activity.involuntary) not; \(r.activity.threads) threads), quiet +\(Format.seconds(r.tailSeconds))"
            + (r.exact.map { ", totals exact \($0 ? "yes" : "NO")" } ?? "")
    }
}
