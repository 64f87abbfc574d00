import CacheWardenService

/// The `overshoot` section of the table and the JSON summary.
struct OvershootSection: BenchSection {
    var result: OvershootResult

    var rows: [Report.Row] {
        let r = result
        let percents = r.overshootPercents
        let runs = percents.map { Format.decimal($0, 1) + " %" }.joined(separator: ", ")
        let pace = r.rate.map { "at " + Format.bytes(Int64($0)) + "/s" } ?? "full speed"
        let label =
            "\(Format.count(r.files)) × \(Format.bytes(Int64(r.size))) \(pace) into \(Format.bytes(r.quota)), \(r.mount)"
        let watched = r.watched
        return [
            Report.Row(
                metric: "peak overshoot above the quota, median of \(percents.count) (\(label))",
                cachewarden: Format.decimal(Stats.median(percents), 1) + " %", peer: "runs: \(runs)", ratio: ""),
            Report.Row(
                metric: "writer speed watched / alone, best of each (\(pace))",
                cachewarden: Format.bytes(Int64(watched.map(\.writerRate).max() ?? 0)) + "/s",
                peer: "alone " + Format.bytes(Int64(r.alone.map(\.writerRate).max() ?? 0)) + "/s",
                ratio: r.writerRatio.map { Format.decimal($0 * 100, 1) + " %" } ?? ""),
            Report.Row(
                metric: "after each run (\(pace)): totals exact / at or under quota / overflows",
                cachewarden: "\(watched.filter { $0.exact == true }.count)/\(watched.count) / "
                    + "\(watched.filter { $0.underQuota == true }.count)/\(watched.count) / \(watched.map(\.overflows).reduce(0, +))",
                peer: "trims per run: " + watched.map { String($0.trims) }.joined(separator: ", "), ratio: ""),
        ]
    }

    var jsonKey: String { result.rate.map { "overshoot_at_\(Int($0 / 1e6))mbs" } ?? "overshoot" }

    var json: JSONValue {
        .object([
            ("files", .integer(result.files)),
            ("file_size", .integer(result.size)),
            ("quota", .integer(result.quota)),
            ("writer_rate_limit", .number(result.rate)),
            ("mount", .string(result.mount)),
            ("overshoot_percent", .array(result.overshootPercents.map { .number($0) })),
            ("overshoot_percent_median", .number(Stats.median(result.overshootPercents))),
            ("writer_ratio", .number(result.writerRatio)),
            (
                "runs",
                .array(
                    result.runs.map { run in
                        .object([
                            ("watched", .bool(run.watched)),
                            ("writer_s", .number(run.writerSeconds)),
                            ("writer_bytes", .integer(run.writerBytes)),
                            ("peak_over_bytes", .integer(run.peakOverBytes)),
                            ("samples", .integer(run.samples)),
                            ("trims", .integer(run.trims)),
                            ("overflows", .integer(run.overflows)),
                            ("exact", .flag(run.exact)),
                            ("under_quota", .flag(run.underQuota)),
                        ])
                    })
            ),
            ("note", .text(result.note)),
        ])
    }
}
