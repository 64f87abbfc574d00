import Foundation
import Glibc

/// Index and memory figures for one tree size.
struct IndexResult: Sendable {
    var tree: TreeInfo
    /// `du -s` wall seconds per timed run (after one warm-up run).
    var du: [Double]
    /// Kibibytes `du -s` reported.
    var duKiB: Int64?
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
    /// Median peak-RSS growth per file over the runs.
    var hwmBytesPerFile: Double { Stats.median(cachewarden.map(\.hwmBytesPerFile)) }
    var rssBytesPerFile: Double { Stats.median(cachewarden.map(\.rssBytesPerFile)) }
    /// The counts every CacheWarden run agreed on (first run's).
    var countedFiles: Int { cachewarden.first?.files ?? 0 }
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

        // du: one warm-up, then the timed runs.
        var du: [Double] = []
        var duKiB: Int64?
        if let duPath = env.du {
            _ = try runToEnd(duPath, ["-s", root])
            for _ in 0..<runs {
                let r = try runToEnd(duPath, ["-s", root])
                du.append(r.seconds)
                duKiB = Int64(r.output.split(whereSeparator: { $0 == "\t" || $0 == " " }).first ?? "")
            }
            log("index: du -s median \(Format.seconds(Stats.median(du)))")
        }

        // inotifywait -r: launch to "Watches established." on stderr.
        var inotify: [Double]?
        var inotifyNote: String?
        if let inw = env.inotifywait {
            var times: [Double] = []
            for _ in 0..<runs {
                let child = try Child(inw, ["-r", "-e", "create", root], stdout: .null, stderr: .pipe)
                var transcript = ""
                let at = child.waitForStderr(containing: "Watches established.", timeout: 600, transcript: &transcript)
                child.stop(signal: SIGKILL, grace: 0)
                guard let at else {
                    inotifyNote =
                        "inotifywait failed: \(transcript.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200))"
                    break
                }
                times.append(Clock.seconds(from: child.startedAt, to: at))
            }
            if inotifyNote == nil {
                inotify = times
                log("index: inotifywait -r median \(Format.seconds(Stats.median(times)))")
            }
        } else {
            inotifyNote = "inotifywait not installed (apt-get install inotify-tools)"
        }

        // CacheWarden: a fresh child per run.
        var reports: [IndexChildReport] = []
        for _ in 0..<runs { reports.append(try indexChild(root, env: env)) }
        var result = IndexResult(
            tree: tree, du: du, duKiB: duKiB, inotifywait: inotify, inotifywaitNote: inotifyNote,
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
