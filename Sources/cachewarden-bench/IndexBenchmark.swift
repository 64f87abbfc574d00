import CacheWarden
import Foundation
import Glibc

/// Index and memory figures for one tree size.
struct IndexResult: Sendable {
    var tree: TreeInfo
    /// `du -s` wall seconds per timed run (after one warm-up run).
    var du: [Double]
    /// Kibibytes `du -s` reported.
    var duKiB: Int64?
    /// The floor walk's seconds per run (`StatWalkFloor`).
    var floor: FloorRuns
    /// `inotifywait -r` seconds from launch to "Watches established." per run; `nil` when not installed.
    var inotifywait: [Double]?
    /// Why there is no inotifywait figure, if there is none.
    var inotifywaitNote: String?
    /// One `index-child` report per run.
    var cachewarden: [IndexChildReport]
    /// The same tree as a user sees it (the CLI process to `ready`, paired with `du -s`); nil without the CLI.
    var userView: UserViewIndex?

    var cachewardenMedian: Double { Stats.median(cachewarden.map(\.seconds)) }
    var duMedian: Double { Stats.median(du) }
    var inotifywaitMedian: Double? { inotifywait.map { Stats.median($0) } }
    /// CacheWarden's index ÷ the floor walk with its two watches a folder.
    var ratioToFloor: Double { cachewardenMedian / Stats.median(floor.watched) }
    /// Median peak-RSS growth per file over the runs.
    var hwmBytesPerFile: Double { Stats.median(cachewarden.map(\.hwmBytesPerFile)) }
    var rssBytesPerFile: Double { Stats.median(cachewarden.map(\.rssBytesPerFile)) }
    /// The counts every CacheWarden run agreed on (first run's).
    var countedFiles: Int { cachewarden.first?.files ?? 0 }
}

/// The floor walk's runs on one tree: without watches, and with two a folder.
struct FloorRuns: Sendable {
    var threads: Int
    var plain: [Double] = []
    var watched: [Double] = []
}

/// 1 (index) and 2 (memory): time from `Watcher.start()` to its return on a warm tree of N files, beside `du -s`
/// and `inotifywait -r`, and the peak-RSS growth per file. Every CacheWarden run is a fresh `index-child` process.
enum IndexBenchmark {
    /// `whileBuilt` runs on the tree before it is removed (the status rows use it).
    static func run(
        files: Int, sparse: Bool, runs: Int, env: Environment, work: String,
        log: (String) -> Void, whileBuilt: ((String) throws -> Void)? = nil
    ) throws -> IndexResult {
        let root = "\(work)/index-\(files)"
        let spec = TreeSpec(files: files, sparse: sparse)
        log(
            "index: building \(files) files (\(sparse ? "sparse" : "real data, ~\(Format.bytes(spec.estimatedBytes))"))…"
        )
        let tree = try TreeBuilder.build(at: root, spec: spec)
        log(
            "index: built \(tree.files) files in \(tree.directories) folders, \(Format.bytes(tree.bytes)) in \(Format.seconds(tree.seconds))"
        )
        defer { Files.discard(root) }
        let dirs = tree.directories
        if dirs > env.maxUserWatches {
            log("index: warning: \(dirs) folders exceed fs.inotify.max_user_watches=\(env.maxUserWatches)")
        }

        let (du, duKiB) = try duRuns(root, runs: runs, env: env, log: log)
        let (inotify, inotifyNote) = try inotifywaitRuns(root, runs: runs, env: env, log: log)
        let (floor, reports) = try alternatingRuns(root, files: tree.files, runs: runs, env: env, log: log)
        var result = IndexResult(
            tree: tree, du: du, duKiB: duKiB, floor: floor, inotifywait: inotify, inotifywaitNote: inotifyNote,
            cachewarden: reports)
        do {
            let view = try UserViewIndex.measure(root: root, files: tree.files, runs: runs, env: env, work: work)
            result.userView = view
            log(
                "index: as a user sees it: cachewarden run → ready \(Format.seconds(view.cachewardenMedian)) vs du -s "
                    + "\(Format.seconds(view.duMedian)) in the same loop (×\(Format.decimal(view.ratioToDu, 2)) median of pairs), "
                    + "RSS after ready \(Format.decimal(view.bytesPerFile, 0)) B/file above an idle watcher")
        } catch {
            log("index: no user-view figures: \(error)")
        }
        log(
            "index: cachewarden start→ready median \(Format.seconds(result.cachewardenMedian)), "
                + "\(result.countedFiles) files, peak RSS +\(Format.decimal(result.hwmBytesPerFile, 0)) B/file")
        if let first = reports.first, first.files > 0 {
            let parts = first.ledger.sorted { $0.value > $1.value }
                .map { "\($0.key) \(Format.decimal(Double($0.value) / Double(first.files), 1))" }
            log("index: ledger B/file: " + parts.joined(separator: ", "))
        }
        if result.countedFiles != files {
            log("index: warning: cachewarden counted \(result.countedFiles) files, the tree has \(files)")
        }
        try whileBuilt?(root)
        return result
    }

    /// `du -s`: one warm-up, then the timed runs; the seconds and the KiB it reported.
    private static func duRuns(_ root: String, runs: Int, env: Environment, log: (String) -> Void) throws
        -> ([Double], Int64?)
    {
        guard let duPath = env.du else { return ([], nil) }
        var du: [Double] = []
        var duKiB: Int64?
        _ = try runToEnd(duPath, ["-s", root])
        for _ in 0..<runs {
            let r = try runToEnd(duPath, ["-s", root])
            du.append(r.seconds)
            duKiB = Int64(r.output.split(whereSeparator: { $0 == "\t" || $0 == " " }).first ?? "")
        }
        log("index: du -s median \(Format.seconds(Stats.median(du)))")
        return (du, duKiB)
    }

    /// CacheWarden (a fresh `index-child` per run) in turns with the floor walk (`StatWalkFloor`) on its walker
    /// count (`TreeScanner.walkerThreads`: a thread per core, at least two), without watches and with CacheWarden's
    /// two a folder: alternating (CacheWarden first in every other run), so that the host's drift falls on all three
    /// alike.
    private static func alternatingRuns(
        _ root: String, files: Int, runs: Int, env: Environment, log: (String) -> Void
    ) throws -> (FloorRuns, [IndexChildReport]) {
        var floor = FloorRuns(threads: TreeScanner.walkerThreads)
        var reports: [IndexChildReport] = []
        for run in 0..<runs {
            // The order turns over every run: none of the three always comes first, or last.
            let turns: [Int?] = run.isMultiple(of: 2) ? [0, 2, nil] : [nil, 2, 0]
            for watches in turns {
                guard let watches else {
                    reports.append(try indexChild(root, env: env))
                    continue
                }
                let walked = try StatWalkFloor(threads: floor.threads, watches: watches).walk(root)
                guard walked.files == files else {
                    throw BenchError("floor walk: statted \(walked.files) regular files, the tree has \(files)")
                }
                if watches == 0 { floor.plain.append(walked.seconds) } else { floor.watched.append(walked.seconds) }
            }
        }
        log(
            "index: floor walk on \(floor.threads) threads median \(Format.seconds(Stats.median(floor.plain))), "
                + "with two watches a folder \(Format.seconds(Stats.median(floor.watched)))")
        return (floor, reports)
    }

    /// `inotifywait -r`: launch to "Watches established." on stderr; the seconds, or why there are none.
    private static func inotifywaitRuns(_ root: String, runs: Int, env: Environment, log: (String) -> Void) throws
        -> ([Double]?, String?)
    {
        guard let inw = env.inotifywait else {
            return (nil, "inotifywait not installed (apt-get install inotify-tools)")
        }
        var times: [Double] = []
        for _ in 0..<runs {
            let child = try Child(inw, ["-r", "-e", "create", root], stdout: .null, stderr: .pipe)
            var transcript = ""
            let at = child.waitForStderr(containing: "Watches established.", timeout: 600, transcript: &transcript)
            child.stop(signal: SIGKILL, grace: 0)
            guard let at else {
                return (
                    nil, "inotifywait failed: \(transcript.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200))"
                )
            }
            times.append(Clock.seconds(from: child.startedAt, to: at))
        }
        log("index: inotifywait -r median \(Format.seconds(Stats.median(times)))")
        return (times, nil)
    }

    /// Indexes `root` in a fresh `index-child` process, with a quota (never reached): the watcher keeps its files
    /// in oldest-first order, as a cache with a quota does, and that order's memory is part of the figure.
    static func indexChild(_ root: String, env: Environment) throws -> IndexChildReport {
        let r = try runToEnd(env.selfExecutable, ["index-child", root, "--quota", "\(Int64(1) << 60)"])
        guard r.status == 0,
            let line = r.output.split(separator: "\n").last(where: { $0.hasPrefix(IndexChildReport.marker) })
        else {
            throw BenchError("index-child failed on \(root) (status \(r.status)): \(r.output.prefix(300))")
        }
        return try JSONDecoder().decode(
            IndexChildReport.self, from: Data(line.dropFirst(IndexChildReport.marker.count).utf8))
    }
}
