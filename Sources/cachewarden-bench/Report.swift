import CacheWardenService
import Foundation

/// One section of the benchmark's output: its rows in the table and its part of the JSON summary. Each
/// benchmark's result type conforms in its own file, so a new section is a new file, not an edit of the report.
protocol BenchSection {
    var rows: [Report.Row] { get }
    var jsonKey: String { get }
    var json: JSONValue { get }
}

/// Everything one benchmark run measured, printed as a table and as a JSON summary.
struct Report {
    var env: Environment
    var mode: String
    var workDirectory: String
    var runs: Int
    var sections: [any BenchSection] = []
    /// The watcher the throughput section ran, for the header.
    var watcherProgram: String?
    /// Sections that failed, with why.
    var failures: [String] = []
    var wallSeconds: Double = 0

    /// One row of the table (ratio = CacheWarden ÷ peer).
    struct Row {
        var metric: String
        var cachewarden: String
        var peer: String
        var ratio: String
    }

    var rows: [Row] { sections.flatMap(\.rows) }

    /// The whole table with the environment lines above it.
    func table() -> String {
        let header = Row(metric: "metric", cachewarden: "cachewarden", peer: "peer", ratio: "ratio")
        let all = [header] + rows
        let w0 = all.map { $0.metric.count }.max() ?? 0
        let w1 = all.map { $0.cachewarden.count }.max() ?? 0
        let w2 = all.map { $0.peer.count }.max() ?? 0
        func pad(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }
        func line(_ r: Row) -> String {
            "\(pad(r.metric, w0))  \(pad(r.cachewarden, w1))  \(pad(r.peer, w2))  \(r.ratio)"
                .trimmingCharacters(in: .whitespaces)
        }
        var out = ["CacheWarden benchmark (\(mode) mode), work folder \(workDirectory)"]
        out += env.summaryLines
        if let watcherProgram { out.append("throughput watcher: \(watcherProgram)") }
        out.append("ratio = cachewarden ÷ peer (times: lower is better for cachewarden; rates: higher is)")
        out.append("")
        out.append(line(header))
        out.append(String(repeating: "-", count: w0 + w1 + w2 + 12))
        out += all.dropFirst().map(line)
        for f in failures { out.append("FAILED: \(f)") }
        out.append("")
        out.append("total wall time: \(Format.seconds(wallSeconds))")
        return out.joined(separator: "\n")
    }

    /// The machine-readable summary.
    func json() -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("mode", .string(mode)),
            ("work_dir", .string(workDirectory)),
            ("runs_per_median", .integer(runs)),
            ("environment", env.json),
        ]
        members += sections.map { ($0.jsonKey, $0.json) }
        members.append(("failures", .array(failures.map { .string($0) })))
        members.append(("wall_s", .number(wallSeconds)))
        return .object(members)
    }
}

extension Environment {
    /// The machine, for the JSON summary.
    var json: JSONValue {
        .object([
            ("filesystem", .string(mountType)),
            ("stat_f_type", .string(statFilesystem)),
            ("mount_point", .string(mountPoint)),
            ("device", .string(mountDevice)),
            ("cpus", .integer(cpus)),
            ("kernel", .string(kernel)),
            ("max_user_watches", .integer(maxUserWatches)),
            ("max_queued_events", .integer(maxQueuedEvents)),
            ("inotifywait", .text(inotifywait)),
            ("du", .text(du)),
            ("watcher_child", .string(cli.map { "cachewarden CLI \($0)" } ?? "not found")),
        ])
    }
}
