import Glibc

/// The sizes of one benchmark run.
struct BenchSizes {
    var index: [Int]
    var writes: Int
    var trims: Int
    var perTrim: Int
    var halfTrim: Int
    var sinkLines: Int
    var hardLinks: Int
    var fill: Fill
    var runs: Int
    var overshootRuns: Int
    /// Folders of the backends section's wide tree (one file each), and its rounds (each backend once a round).
    var backendDirectories: Int
    var backendRuns: Int
    /// Seconds of each paced burst, and the paced section's rounds (each watcher once a round at each rate).
    var pacedSeconds: Double
    var pacedRuns: Int
}

/// Runs the sections the command asked for, in order, into one report; a section that fails is recorded and the
/// others still run.
struct BenchRunner {
    static let allSections = [
        "index", "links", "throughput", "trim", "overshoot", "sink", "footprint", "backends", "paced",
    ]

    let sizes: BenchSizes
    let env: Environment
    let work: String
    let log: (String) -> Void
    var report: Report
    /// The binary the footprint section measures (see `FootprintBenchmark.binary`).
    var footprintBinary: String?
    /// Trees the throughput section leaves for the trim section to reuse.
    private var spares: [SpareTree] = []

    init(sizes: BenchSizes, env: Environment, work: String, log: @escaping (String) -> Void, report: Report) {
        self.sizes = sizes
        self.env = env
        self.work = work
        self.log = log
        self.report = report
    }

    mutating func runSections(_ sections: Set<String>) {
        for name in Self.allSections where sections.contains(name) {
            do {
                switch name {
                case "index": try index()
                case "links":
                    report.sections.append(
                        try HardLinkBenchmark.run(
                            files: sizes.hardLinks, runs: sizes.runs, env: env, work: work, log: log))
                case "throughput": try throughput()
                case "trim": try trim()
                case "overshoot":
                    // At full speed, and at the writer issue 33 measured against (871 MB/s): full speed on a faster host
                    // outruns what deleting costs (docs/performance.md, "Overshoot").
                    for rate in [nil, 871e6] as [Double?] {
                        report.sections.append(
                            OvershootSection(
                                result: try OvershootBenchmark.run(
                                    rate: rate, runs: sizes.overshootRuns, env: env, work: work, log: log)))
                    }
                case "footprint": try footprint()
                case "backends":
                    report.sections.append(
                        BackendSection(
                            result: try BackendBenchmark.run(
                                files: sizes.index.max() ?? 10_000, directories: sizes.backendDirectories,
                                writes: sizes.writes,
                                runs: sizes.backendRuns, env: env, work: work, log: log)))
                case "paced":
                    report.sections.append(
                        PacedSection(
                            result: try PacedBenchmark.run(
                                seconds: sizes.pacedSeconds, rounds: sizes.pacedRuns, env: env, work: work, log: log)))
                default: report.sections.append(try SinkBenchmark.run(lines: sizes.sinkLines, work: work, log: log))
                }
            } catch {
                log("\(name) failed: \(error)")
                report.failures.append("\(name): \(error)")
            }
        }
        for spare in spares { Files.discard(spare.path) }
        spares = []
    }

    private mutating func index() throws {
        var results: [IndexResult] = []
        var statuses: [StatusResult] = []
        defer {
            report.sections.append(IndexSection(results: results, runs: sizes.runs))
            if !statuses.isEmpty { report.sections.append(StatusSection(results: statuses)) }
        }
        let (env, work, log, runs) = (self.env, self.work, self.log, sizes.runs)
        for n in sizes.index {
            let spec = TreeSpec(files: n, sparse: false)
            let sparse: Bool
            switch sizes.fill {
            case .real: sparse = false
            case .sparse: sparse = true
            case .auto: sparse = spec.estimatedBytes > min(4 << 30, Self.freeBytes(work) / 2)
            }
            // The largest tree also answers `status` through a daemon's socket (while it still exists).
            let status: (String) throws -> Void = { root in
                if let r = try StatusBenchmark.run(root: root, files: n, runs: runs, env: env, work: work, log: log) {
                    statuses.append(r)
                }
            }
            results.append(
                try IndexBenchmark.run(
                    files: n, sparse: sparse, runs: runs, env: env, work: work, log: log,
                    whileBuilt: n == sizes.index.max() ? status : nil))
        }
    }

    private mutating func footprint() throws {
        guard let binary = footprintBinary else { log("footprint: skipped (no cachewarden binary found)"); return }
        report.sections.append(
            FootprintSection(result: try FootprintBenchmark.run(binary: binary, env: env, work: work, log: log)))
    }

    private mutating func throughput() throws {
        let result = try ThroughputBenchmark.run(files: sizes.writes, env: env, work: work, spares: &spares, log: log)
        report.watcherProgram = result.watcherProgram
        report.sections.append(result)
    }

    private mutating func trim() throws {
        var trim = TrimSection()
        defer { report.sections.append(trim) }
        trim.latency = try TrimBenchmark.latency(trims: sizes.trims, filesPerTrim: sizes.perTrim, work: work, log: log)
        trim.half = try TrimBenchmark.halfTrim(files: sizes.halfTrim, env: env, work: work, spares: spares, log: log)
        spares = []
    }

    /// Free bytes for an unprivileged user on the filesystem of `path`.
    private static func freeBytes(_ path: String) -> Int64 {
        var vfs = statvfs()
        guard statvfs(path, &vfs) == 0 else { return 0 }
        return Int64(vfs.f_bavail) * Int64(vfs.f_frsize)
    }
}
