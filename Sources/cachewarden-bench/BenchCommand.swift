import CacheWardenCommandLine
import Foundation
import Glibc

/// How index trees get their bytes.
enum Fill: String, CaseIterable {
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
struct BenchCommand {
    static let spec = CommandSpec(
        "cachewarden-bench",
        abstract: "Benchmark CacheWarden beside du, inotifywait and xargs rm on the same trees.",
        discussion: """
            Builds its trees in a fresh temporary folder (under --dir), measures, prints a table and a JSON \
            summary, and removes the folder. Sections: index (start→ready vs du -s, inotifywait -r and a floor \
            walk — stat only, a thread per core, with and without watches — plus peak RSS per file), throughput \
            (a writer thread vs the watcher in a child), trim (quota-trim latency, \
            half-tree trim vs xargs rm, per-file cost vs a watched unlink loop), overshoot (peak used bytes above a \
            64 MB quota on a tmpfs of its own under a writer of 8,000 × 64 KiB at full speed and at 871 MB/s, \
            sampled every 200 µs; needs root to mount it), sink (JSON lines/s), footprint (binary size stripped, idle RSS of \
            `run` on an empty folder, `--version` time; vs inotifywait; measures --binary, default the static build of \
            `make build` when present, else the CLI), backends (inotify beside fanotify: ready time and kernel objects on \
            200k folders and on the largest index tree, CPU per file under the writer at full speed and paced at \
            3,000 files/s; needs root), paced (a writer of 4 KiB files at 400 and 4,000 files/s for --paced-seconds, \
            watched by `run` and by inotifywait -m -r in alternating turns: watcher CPU and context switches per file). --quick: 10k-file index, 20k writes, 5 trims; under a minute on 2 cores. Full: 100k and 1M-file index, 200k writes, 20 trims of 1,000 files.
            """,
        options: [
            .flag("quick", help: "Small sizes: finishes in under a minute."),
            .repeated(
                "files", "N", help: "Index tree size (repeat for several; default 100000 and 1000000, quick 10000)."),
            .value("writes", "N", help: "Files the throughput writer creates (default 200000, quick 20000)."),
            .value("trims", "N", help: "Quota trims to time (default 20, quick 5)."),
            .value("files-per-trim", "N", help: "Files each quota trim removes (default 1000, quick 100)."),
            .value("half-trim-files", "N", help: "Tree size for the half-tree trim (default 100000, quick 10000)."),
            .value("hard-link-files", "N", help: "Files in the hard-linked tree (default 100000, quick 10000)."),
            .value("sink-lines", "N", help: "JSON lines to encode (default 1000000, quick 100000)."),
            .value("runs", "N", help: "Timed runs per median (index, paced rounds; default 3, paced 1 with --quick)."),
            .value("paced-seconds", "N", help: "Seconds of each paced burst (default 12, quick 3)."),
            .value("dir", "path", help: "Where to create the temporary folder (default /tmp).", completion: .directory),
            .value("json", "file", help: "Also write the JSON summary to this file.", completion: .file),
            .value(
                "cli", "path",
                help:
                    "The cachewarden CLI binary for the throughput child (default: next to this binary, then .build/{release,debug}).",
                completion: .file),
            .value(
                "binary", "path",
                help:
                    "The cachewarden binary the footprint section measures (default: .build-install/release/cachewarden, what `make build` writes and `make install` installs, when it exists; else the CLI).",
                completion: .file),
            .value(
                "fill", "fill", help: "Index-tree data: auto, real or sparse.",
                completion: .values(Fill.allCases.map(\.rawValue))),
            .value(
                "only", "list",
                help:
                    "Comma-separated sections to run: index,links,throughput,trim,overshoot,sink,footprint,backends,paced (default: all)."
            ),
            .flag("keep", help: "Keep the temporary folder."),
        ]
    )

    var quick: Bool
    var files: [Int]
    var writes: Int?
    var trims: Int?
    var filesPerTrim: Int?
    var halfTrimFiles: Int?
    var hardLinkFiles: Int?
    var sinkLines: Int?
    var runs: Int
    var pacedSeconds: Int?
    var dir: String
    var json: String?
    var cli: String?
    var binary: String?
    var fill: Fill
    var only: String?
    var keep: Bool

    init(_ a: ParsedArguments) throws {
        quick = a.flag("quick")
        files = try a.values("files").map { text throws(UsageError) in
            guard let n = Int(text), n > 0 else {
                throw a.usageError("bad value `\(text)` for --files: expected a positive whole number")
            }
            return n
        }
        writes = try a.integer("writes", in: 1...Int.max)
        trims = try a.integer("trims", in: 1...Int.max)
        filesPerTrim = try a.integer("files-per-trim", in: 1...Int.max)
        halfTrimFiles = try a.integer("half-trim-files", in: 1...Int.max)
        hardLinkFiles = try a.integer("hard-link-files", in: 1...Int.max)
        sinkLines = try a.integer("sink-lines", in: 1...Int.max)
        runs = try a.integer("runs", in: 1...Int.max) ?? 3
        pacedSeconds = try a.integer("paced-seconds", in: 1...3600)
        dir = a.value("dir") ?? "/tmp"
        json = a.value("json")
        cli = a.value("cli")
        binary = a.value("binary")
        fill = Fill(rawValue: try a.choice("fill", of: Fill.allCases.map(\.rawValue)) ?? "auto") ?? .auto
        only = a.value("only")
        keep = a.flag("keep")
        if let only {
            for s in only.split(separator: ",") where !BenchRunner.allSections.contains(String(s)) {
                throw a.usageError("unknown section \(s): use \(BenchRunner.allSections.joined(separator: ", "))")
            }
        }
    }

    /// The sizes the options ask for, with the defaults of a quick or a full run filled in.
    var sizes: BenchSizes {
        BenchSizes(
            index: files.isEmpty ? (quick ? [10_000] : [100_000, 1_000_000]) : files,
            writes: writes ?? (quick ? 20_000 : 200_000), trims: trims ?? (quick ? 5 : 20),
            perTrim: filesPerTrim ?? (quick ? 100 : 1000), halfTrim: halfTrimFiles ?? (quick ? 10_000 : 100_000),
            sinkLines: sinkLines ?? (quick ? 100_000 : 1_000_000),
            hardLinks: hardLinkFiles ?? (quick ? 10_000 : 100_000),
            fill: fill, runs: runs, overshootRuns: quick ? 1 : 3, backendDirectories: quick ? 20_000 : 200_000,
            backendRuns: quick ? 1 : runs,
            pacedSeconds: Double(pacedSeconds ?? (quick ? 3 : 12)), pacedRuns: quick ? 1 : runs)
    }

    func run() throws {
        let wallStart = Clock.nanos()
        let log: (String) -> Void = { message in
            if Cleanup.shared.isStopping { return }
            FileHandle.standardError.write(
                Data("[\(Format.decimal(Clock.seconds(since: wallStart), 1)) s] \(message)\n".utf8))
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
        var runner = BenchRunner(
            sizes: sizes, env: env, work: work, log: log,
            report: Report(env: env, mode: quick ? "quick" : "full", workDirectory: work, runs: runs))
        runner.footprintBinary = FootprintBenchmark.binary(explicit: binary, env: env)
        let sections = Set(
            (only ?? BenchRunner.allSections.joined(separator: ",")).split(separator: ",").map(String.init))
        runner.runSections(sections)
        runner.report.wallSeconds = Clock.seconds(since: wallStart)
        try Self.printReport(runner.report, json: json, log: log)
        // Thrown, not exit(1): the deferred clean-up (children, the temporary tree) runs first.
        if !runner.report.failures.isEmpty { throw BenchFailed() }
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

/// `cachewarden-bench [options]`, or `cachewarden-bench index-child <tree>` (the hidden child the index section
/// runs): a usage error is one line and exit 2, a failure one line and exit 1.
@main
enum BenchMain {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            if arguments.first == IndexChildCommand.spec.name {
                let root = CommandSpec(
                    "cachewarden-bench", abstract: BenchCommand.spec.abstract, subcommands: [IndexChildCommand.spec])
                if case .run(let parsed) = try parse(root, arguments) { try IndexChildCommand(parsed).run() }
            } else if case .run(let parsed) = try parse(BenchCommand.spec, arguments) {
                try BenchCommand(parsed).run()
            }
        } catch let error as UsageError {
            fail(error.description, status: 2)
        } catch is BenchFailed {
            exit(1) // the report has said which figures failed
        } catch {
            fail("\(error)", status: 1)
        }
    }

    /// Parses; prints the help when that is what was asked for.
    private static func parse(_ root: CommandSpec, _ arguments: [String]) throws(UsageError)
        -> CommandLineParser.Outcome
    {
        let outcome = try CommandLineParser(root: root).parse(arguments)
        if case .print(let text) = outcome { print(text, terminator: "") }
        return outcome
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data("cachewarden-bench: \(message)\n".utf8))
        exit(status)
    }
}

/// Some figure of the run failed its check (the report lists them): exit 1 once everything is cleaned up.
struct BenchFailed: Error {}
