import CacheWardenService
import Foundation
import Glibc

/// What the backends section measured: inotify and fanotify on the same trees, alternating.
struct BackendResult: Sendable {
    struct Tree: Sendable {
        var label: String
        var files: Int
        var directories: Int
        var inotify: [IndexChildReport]
        var fanotify: [IndexChildReport]
    }
    var trees: [Tree]
    /// Writer bursts under `run --backend inotify` and `--backend fanotify`, alternating: at full speed, then
    /// paced at `pacedRate` files a second.
    var inotifyWriter: [WatchedRun]
    var fanotifyWriter: [WatchedRun]
    var inotifyPaced: [WatchedRun] = []
    var fanotifyPaced: [WatchedRun] = []
    var note: String?
    /// `fs.inotify.max_user_watches` during the section (raised for it when root).
    var inotifyLimit = 0
}

/// "backends" (issue 21): fanotify beside inotify — time to `ready` and the kernel objects held on a tree of many
/// files in 10k folders and on one of 200k folders (one file each), and watcher CPU per file under the throughput
/// writer, at full speed and paced, with the totals checked against a fresh scan. Needs what fanotify needs (root,
/// Linux 5.9).
enum BackendBenchmark {
    /// The paced writer's speed: about what a local disk's writer managed under the watcher (2–4k files a second
    /// on this project's ext4), where wake-ups, not files, make most of the watcher's cost.
    static let pacedRate = 3_000.0

    static func run(
        files: Int, directories: Int, writes: Int, runs: Int, env: Environment, work: String,
        log: (String) -> Void
    ) throws -> BackendResult {
        var result = BackendResult(trees: [], inotifyWriter: [], fanotifyWriter: [])
        let probe = try runToEnd(env.selfExecutable, ["index-child", work, "--backend", "fanotify"])
        guard probe.status == 0 else {
            result.note = "fanotify is not available here: \(probe.output.split(separator: "\n").last ?? "")"
            log("backends: \(result.note!)")
            return result
        }
        // inotify at its best: no folder served past its watch limit (two watches a folder with spare_open).
        let raised = WatchLimit.raise(to: 2 * directories + 10_000, log: log)
        defer { raised?.restore(log: log) }
        result.inotifyLimit = raised?.raisedTo ?? env.maxUserWatches
        let wide = "\(work)/backends-dirs"
        log("backends: building \(directories) folders of one file each…")
        let built = try buildFolders(wide, count: directories)
        log("backends: built in \(Format.seconds(built))")
        result.trees.append(
            try compare(
                wide, label: "\(directories) folders × 1 file", files: directories,
                directories: directories, runs: runs, env: env, log: log))
        Files.discard(wide)
        let deep = "\(work)/backends-files"
        log("backends: building \(files) files (sparse)…")
        let tree = try TreeBuilder.build(at: deep, spec: TreeSpec(files: files, sparse: true))
        result.trees.append(
            try compare(
                deep, label: "\(files) files in \(tree.directories) folders", files: tree.files,
                directories: tree.directories, runs: runs, env: env, log: log))
        Files.discard(deep)
        if let cli = env.cli {
            for round in 0..<runs {
                for backend in round % 2 == 0 ? ["inotify", "fanotify"] : ["fanotify", "inotify"] {
                    let run = try ThroughputBenchmark.cachewarden(
                        files: writes, size: 4096, program: cli,
                        work: "\(work)/backends-tp", backend: backend, log: log)
                    if backend == "inotify" {
                        result.inotifyWriter.append(run)
                    } else {
                        result.fanotifyWriter.append(run)
                    }
                }
            }
            // Ten seconds of the paced writer at most (a tenth of the full-speed files in quick mode).
            let paced = min(writes / 10, Int(pacedRate) * 10)
            for round in 0..<runs {
                for backend in round % 2 == 0 ? ["inotify", "fanotify"] : ["fanotify", "inotify"] {
                    let run = try ThroughputBenchmark.cachewarden(
                        files: paced, size: 4096, program: cli, work: "\(work)/backends-tp",
                        backend: backend, rate: pacedRate, log: log)
                    if backend == "inotify" {
                        result.inotifyPaced.append(run)
                    } else {
                        result.fanotifyPaced.append(run)
                    }
                }
            }
        }
        return result
    }

    /// `runs` index-child runs of each backend on `root`, alternating.
    private static func compare(
        _ root: String, label: String, files: Int, directories: Int, runs: Int, env: Environment,
        log: (String) -> Void
    ) throws -> BackendResult.Tree {
        var tree = BackendResult.Tree(label: label, files: files, directories: directories, inotify: [], fanotify: [])
        for round in 0..<runs {
            for backend in round % 2 == 0 ? ["inotify", "fanotify"] : ["fanotify", "inotify"] {
                let r = try runToEnd(
                    env.selfExecutable, ["index-child", root, "--quota", "\(Int64(1) << 60)", "--backend", backend])
                guard r.status == 0,
                    let line = r.output.split(separator: "\n").last(where: { $0.hasPrefix(IndexChildReport.marker) })
                else {
                    throw BenchError("index-child --backend \(backend) failed on \(root): \(r.output.suffix(300))")
                }
                let report = try JSONDecoder().decode(
                    IndexChildReport.self, from: Data(line.dropFirst(IndexChildReport.marker.count).utf8))
                if backend == "inotify" { tree.inotify.append(report) } else { tree.fanotify.append(report) }
            }
        }
        let (i, f) = (Stats.median(tree.inotify.map(\.seconds)), Stats.median(tree.fanotify.map(\.seconds)))
        log(
            "backends: \(label): ready inotify \(Format.seconds(i)) (\(tree.inotify.first?.inotifyWatches ?? 0) watches), "
                + "fanotify \(Format.seconds(f)) (\(tree.fanotify.first?.fanotifyMarks ?? 0) marks, \(tree.fanotify.first?.inotifyWatches ?? 0) watches): ×\(Format.decimal(f / i, 2))"
        )
        return tree
    }

    /// `count` folders in groups of 1,000 under `root`, each with one 4 KiB file (sparse); returns the seconds.
    private static func buildFolders(_ root: String, count: Int) throws -> Double {
        let started = Clock.nanos()
        try Files.makeDirectory(root)
        for i in 0..<count {
            let group = "\(root)/g\(i / 1000)"
            if i % 1000 == 0 { try Files.makeDirectory(group) }
            let folder = "\(group)/d\(i % 1000)"
            guard mkdir(folder, 0o755) == 0 else {
                throw BenchError("mkdir \(folder): \(String(cString: strerror(errno)))")
            }
            let fd = open("\(folder)/f", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else { throw BenchError("create \(folder)/f: \(String(cString: strerror(errno)))") }
            _ = ftruncate(fd, 4096)
            close(fd)
        }
        return Clock.seconds(since: started)
    }
}

/// The backends rows: ready time, kernel objects and memory per tree; CPU per file under the writer.
struct BackendSection: BenchSection {
    var result: BackendResult

    var rows: [Report.Row] {
        if let note = result.note { return [Report.Row(metric: "backends", cachewarden: note, peer: "", ratio: "")] }
        var rows: [Report.Row] = []
        for t in result.trees {
            let (i, f) = (Stats.median(t.inotify.map(\.seconds)), Stats.median(t.fanotify.map(\.seconds)))
            rows.append(
                Report.Row(
                    metric:
                        "backends: \(t.label): start → ready, fanotify (median of \(t.fanotify.count); inotify's limit \(result.inotifyLimit))",
                    cachewarden: Format.seconds(f), peer: "inotify: \(Format.seconds(i))", ratio: Format.ratio(f, i)))
            let fw = t.fanotify.first, iw = t.inotify.first
            rows.append(
                Report.Row(
                    metric: "backends: \(t.label): kernel objects at ready, fanotify",
                    cachewarden: "\(fw?.fanotifyMarks ?? 0) mark(s), \(fw?.inotifyWatches ?? 0) watches",
                    peer: "inotify: \(iw?.inotifyWatches ?? 0) watches", ratio: ""))
            let (gi, gf) = (
                Stats.median(t.inotify.map { Double($0.unreclaimableGrowth) }),
                Stats.median(t.fanotify.map { Double($0.unreclaimableGrowth) })
            )
            rows.append(
                Report.Row(
                    metric: "backends: \(t.label): unreclaimable slab growth to ready (noisy)",
                    cachewarden: Format.bytes(Int64(gf)), peer: "inotify: \(Format.bytes(Int64(gi)))", ratio: ""))
        }
        let cpu = { (runs: [WatchedRun]) in Stats.median(runs.compactMap(\.cpuPer100k)) }
        if !result.fanotifyWriter.isEmpty {
            let (i, f) = (cpu(result.inotifyWriter), cpu(result.fanotifyWriter))
            let exact = (result.inotifyWriter + result.fanotifyWriter).allSatisfy { $0.exact == true }
            rows.append(
                Report.Row(
                    metric:
                        "backends: watcher CPU per 100k files written, fanotify (median of \(result.fanotifyWriter.count)); totals exact: \(exact ? "yes" : "NO")",
                    cachewarden: Format.seconds(f), peer: "inotify: \(Format.seconds(i))", ratio: Format.ratio(f, i)))
        }
        if !result.fanotifyPaced.isEmpty {
            let (i, f) = (cpu(result.inotifyPaced), cpu(result.fanotifyPaced))
            let exact = (result.inotifyPaced + result.fanotifyPaced).allSatisfy { $0.exact == true }
            rows.append(
                Report.Row(
                    metric:
                        "backends: the same, writer paced at \(Format.rate(BackendBenchmark.pacedRate)) files/s under both (median of \(result.fanotifyPaced.count)); totals exact: \(exact ? "yes" : "NO")",
                    cachewarden: Format.seconds(f), peer: "inotify: \(Format.seconds(i))", ratio: Format.ratio(f, i)))
        }
        return rows
    }

    var jsonKey: String { "backends" }

    var json: JSONValue {
        .object([
            ("note", .text(result.note)),
            ("inotify_max_user_watches", .integer(result.inotifyLimit)),
            (
                "trees",
                .array(
                    result.trees.map { t in
                        .object([
                            ("tree", .string(t.label)),
                            ("inotify_ready_s", .array(t.inotify.map { .number($0.seconds) })),
                            ("fanotify_ready_s", .array(t.fanotify.map { .number($0.seconds) })),
                            ("inotify_watches", .integer(t.inotify.first?.inotifyWatches)),
                            ("fanotify_marks", .integer(t.fanotify.first?.fanotifyMarks)),
                            ("inotify_slab_growth", .array(t.inotify.map { .integer($0.unreclaimableGrowth) })),
                            ("fanotify_slab_growth", .array(t.fanotify.map { .integer($0.unreclaimableGrowth) })),
                        ])
                    })
            ),
            ("inotify_cpu_per_100k_s", .array(result.inotifyWriter.compactMap { $0.cpuPer100k.map { .number($0) } })),
            ("fanotify_cpu_per_100k_s", .array(result.fanotifyWriter.compactMap { $0.cpuPer100k.map { .number($0) } })),
            ("paced_files_per_s", .number(BackendBenchmark.pacedRate)),
            (
                "inotify_paced_cpu_per_100k_s",
                .array(result.inotifyPaced.compactMap { $0.cpuPer100k.map { .number($0) } })
            ),
            (
                "fanotify_paced_cpu_per_100k_s",
                .array(result.fanotifyPaced.compactMap { $0.cpuPer100k.map { .number($0) } })
            ),
            (
                "exact",
                .flag(
                    (result.inotifyWriter + result.fanotifyWriter + result.inotifyPaced + result.fanotifyPaced)
                        .allSatisfy { $0.exact == true })
            ),
        ])
    }
}
