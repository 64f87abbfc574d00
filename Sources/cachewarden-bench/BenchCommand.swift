import ArgumentParser
import Foundation
import Glibc

/// How index trees get their bytes.
enum Fill: String, ExpressibleByArgument, CaseIterable {
    /// Real data up to 4 GiB (and half the free space), sparse beyond.
    case auto
    /// Every byte written (then `sync`).
    case real
    /// Sizes set with `ftruncate` (no data blocks): same metadata work for the indexers, no disk traffic.
    case sparse
}

/// `cachewarden-bench`: CacheWarden beside `du`, `inotifywait` and `xargs rm` on trees it builds itself.
///
/// ```
/// swift run -c release cachewarden-bench [--quick] [--files N] [--json FILE]
/// ```
@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cachewarden-bench",
        abstract: "Benchmark CacheWarden beside du, inotifywait and xargs rm on the same trees.",
        discussion: """
            Builds its trees in a fresh temporary folder (under --dir), measures, prints a table and a JSON \
            summary, and removes the folder. Sections: index (start→ready vs du -s and inotifywait -r, plus peak \
            RSS per file), throughput (a writer thread vs the watcher in a child), trim (quota-trim latency, \
            half-tree trim vs xargs rm, per-file cost vs a watched unlink loop), overshoot (peak used bytes above a \
            64 MB quota on a tmpfs of its own under a writer of 8,000 × 64 KiB at full speed and at 700 MB/s, \
            sampled every 200 µs; needs root to mount it), sink (JSON lines/s), footprint (binary size stripped, idle RSS of \
            `run` on an empty folder, `--version` time; vs inotifywait; measures --binary, default the static build of \
            `make build` when present, else the CLI). --quick: 10k-file index, 20k writes, 5 trims; \
            under a minute on 2 cores. Full: 100k and 1M-file index, 200k writes, 20 trims of 1,000 files.
            """,
        subcommands: [IndexChildCommand.self])

    @Flag(help: "Small sizes: finishes in under a minute.")
    var quick = false

    @Option(name: .long, help: ArgumentHelp("Index tree size (repeat for several; default 100000 and 1000000, quick 10000).", valueName: "N"))
    var files: [Int] = []

    @Option(help: ArgumentHelp("Files the throughput writer creates (default 200000, quick 20000).", valueName: "N"))
    var writes: Int?

    @Option(help: ArgumentHelp("Quota trims to time (default 20, quick 5).", valueName: "N"))
    var trims: Int?

    @Option(name: .customLong("files-per-trim"), help: ArgumentHelp("Files each quota trim removes (default 1000, quick 100).", valueName: "N"))
    var filesPerTrim: Int?

    @Option(name: .customLong("half-trim-files"), help: ArgumentHelp("Tree size for the half-tree trim (default 100000, quick 10000).", valueName: "N"))
    var halfTrimFiles: Int?

    @Option(name: .customLong("hard-link-files"), help: ArgumentHelp("Files in the hard-linked tree (default 100000, quick 10000).", valueName: "N"))
    var hardLinkFiles: Int?

    @Option(name: .customLong("sink-lines"), help: ArgumentHelp("JSON lines to encode (default 1000000, quick 100000).", valueName: "N"))
    var sinkLines: Int?

    @Option(help: ArgumentHelp("Timed runs per median (index).", valueName: "N"))
    var runs = 3

    @Option(help: ArgumentHelp("Where to create the temporary folder.", valueName: "path"))
    var dir = "/tmp"

    @Option(help: ArgumentHelp("Also write the JSON summary to this file.", valueName: "file"))
    var json: String?

    @Option(help: ArgumentHelp("The cachewarden CLI binary for the throughput child (default: next to this binary, then .build/{release,debug}).", valueName: "path"))
    var cli: String?

    @Option(help: ArgumentHelp("The cachewarden binary the footprint section measures (default: .build-install/release/cachewarden, what `make build` writes and `make install` installs, when it exists; else the CLI).", valueName: "path"))
    var binary: String?

    @Option(help: ArgumentHelp("Index-tree data: auto, real or sparse.", valueName: "fill"))
    var fill: Fill = .auto

    @Option(help: ArgumentHelp("Comma-separated sections to run: index,links,throughput,trim,overshoot,sink,footprint (default: all).", valueName: "list"))
    var only: String?

    @Flag(help: "Keep the temporary folder.")
    var keep = false

    func validate() throws {
        let sizes = files + [writes, trims, filesPerTrim, halfTrimFiles, hardLinkFiles, sinkLines].compactMap { $0 }
        guard sizes.allSatisfy({ $0 > 0 }), runs > 0 else { throw ValidationError("sizes and --runs must be positive") }
        if let only {
            for s in only.split(separator: ",") where !BenchRunner.allSections.contains(String(s)) {
                throw ValidationError("unknown section \(s): use \(BenchRunner.allSections.joined(separator: ", "))")
            }
        }
    }

    /// The sizes the options ask for, with the defaults of a quick or a full run filled in.
    var sizes: BenchSizes {
        BenchSizes(index: files.isEmpty ? (quick ? [10_000] : [100_000, 1_000_000]) : files,
                   writes: writes ?? (quick ? 20_000 : 200_000), trims: trims ?? (quick ? 5 : 20),
                   perTrim: filesPerTrim ?? (quick ? 100 : 1000), halfTrim: halfTrimFiles ?? (quick ? 10_000 : 100_000),
                   sinkLines: sinkLines ?? (quick ? 100_000 : 1_000_000), hardLinks: hardLinkFiles ?? (quick ? 10_000 : 100_000),
                   fill: fill, runs: runs, overshootRuns: quick ? 1 : 3)
    }

    func run() throws {
        let wallStart = Clock.nanos()
        let log: (String) -> Void = { message in
            if Cleanup.shared.isStopping { return }
            FileHandle.standardError.write(Data("[\(Format.decimal(Clock.seconds(since: wallStart), 1)) s] \(message)\n".utf8))
        }
        Cleanup.shared.installSignalHandlers()
        let work = try Files.makeWorkDirectory(under: dir)
        Cleanup.shared.setWorkDirectory(keep ? nil : work)
        Files.trashDirectory.withLock { $0 = "\(work)/trash" }
        defer {
            Cleanup.shared.killAll()
            if !keep {
                log("removing \(work)…")
                Files.removeTree(work)
            }
        }
        let env = Environment.detect(workDirectory: work, cli: cli)
        for line in env.summaryLines { log(line) }
        var runner = BenchRunner(sizes: sizes, env: env, work: work, log: log,
                                 report: Report(env: env, mode: quick ? "quick" : "full", workDirectory: work, runs: runs))
        runner.footprintBinary = FootprintBenchmark.binary(explicit: binary, env: env)
        let sections = Set((only ?? BenchRunner.allSections.joined(separator: ",")).split(separator: ",").map(String.init))
        runner.runSections(sections)
        runner.report.wallSeconds = Clock.seconds(since: wallStart)
        try Self.printReport(runner.report, json: json, log: log)
        if !runner.report.failures.isEmpty { throw ExitCode(1) }
    }

    private static func printReport(_ report: Report, json: String?, log: (String) -> Void) throws {
        print(report.table())
        let summary = report.json().rendered()
        print("")
        print("JSON summary:")
        print(summary)
        if let json {
            guard FileManager.default.createFile(atPath: json, contents: Data((summary + "\n").utf8)) else {
                throw BenchError("cannot write \(json)")
            }
            log("JSON summary written to \(json)")
        }
    }
}
