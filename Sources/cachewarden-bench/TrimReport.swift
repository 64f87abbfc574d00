import CacheWardenService

/// The trim section: quota-trim latency and the half-tree trim beside `xargs rm`.
struct TrimSection: BenchSection {
    var latency: TrimLatencyResult?
    var half: HalfTrimResult?

    var rows: [Report.Row] {
        var rows: [Report.Row] = []
        if let l = latency {
            let label = "\(l.latenciesMs.count) trims of ~\(Format.count(l.filesPerTrim)) files"
            rows.append(
                Report.Row(
                    metric: "quota trim latency p50 (close→trim event)",
                    cachewarden: Format.ms(Stats.percentile(l.latenciesMs, 50)), peer: label, ratio: ""))
            rows.append(
                Report.Row(
                    metric: "quota trim latency p99",
                    cachewarden: Format.ms(Stats.percentile(l.latenciesMs, 99)),
                    peer: l.early > 0 ? "\(l.early) early (0 ms)" : "", ratio: ""))
            rows.append(
                Report.Row(
                    metric: "quota trim duration p50 (report)",
                    cachewarden: Format.ms(Stats.percentile(l.trimDurationsMs, 50)),
                    peer: "removed p50: \(Int(Stats.percentile(l.removed.map(Double.init), 50))) files", ratio: ""))
            let cost = Stats.median(l.trimMicroseconds), floor = Stats.median(l.floorMicroseconds)
            rows += Self.floorRows(
                "quota trim cost per file vs watched unlink floor (medians)", cost, floor,
                "quota trim cost per file ÷ the floor right after it (median of pairs)", l.pairedRatios)
            rows += Self.floorRows(
                "the trash path's floor (rename, stat, unlink) vs the unlink floor",
                Stats.median(l.trashFloorMicroseconds), floor,
                "quota trim cost per file ÷ the trash path's floor right after it", l.trashPairedRatios)
        }
        if let h = half {
            rows.append(
                Report.Row(
                    metric: "trim half of \(Format.shortCount(h.files)) files (\(Format.count(h.removed)) removed)",
                    cachewarden: Format.seconds(h.seconds),
                    peer: h.rmSeconds.map { "xargs -0 rm: \(Format.seconds($0))" } ?? "xargs missing",
                    ratio: Format.ratio(h.seconds, h.rmSeconds)))
            rows.append(
                Report.Row(
                    metric: "totals exact after that trim",
                    cachewarden: h.exactAfter ? "yes" : "NO", peer: "", ratio: ""))
        }
        return rows
    }

    /// A cost per file beside the unlink floor (medians), then the median of the paired ratios `pairs`.
    private static func floorRows(
        _ metric: String, _ cost: Double, _ floor: Double, _ pairedMetric: String, _ pairs: [Double]
    ) -> [Report.Row] {
        [
            Report.Row(
                metric: metric, cachewarden: Format.decimal(cost, 1) + " µs",
                peer: "unlink loop " + Format.decimal(floor, 1) + " µs",
                ratio: Format.ratio(cost, floor > 0 ? floor : nil)),
            Report.Row(
                metric: pairedMetric, cachewarden: "", peer: "\(pairs.count) pairs",
                ratio: "×" + Format.decimal(Stats.median(pairs), 2)),
        ]
    }

    var jsonKey: String { "trim" }

    var json: JSONValue {
        var trim: [(String, JSONValue)] = []
        if let l = latency {
            trim.append(
                (
                    "latency",
                    .object([
                        ("quota", .integer(l.quota)),
                        ("file_size", .integer(l.fileSize)),
                        ("files_per_trim", .integer(l.filesPerTrim)),
                        ("trims", .integer(l.latenciesMs.count)),
                        ("p50_ms", .number(Stats.percentile(l.latenciesMs, 50))),
                        ("p99_ms", .number(Stats.percentile(l.latenciesMs, 99))),
                        ("max_ms", .number(l.latenciesMs.max())),
                        ("latencies_ms", .array(l.latenciesMs.map { .number($0) })),
                        ("trim_duration_p50_ms", .number(Stats.percentile(l.trimDurationsMs, 50))),
                        ("removed", .array(l.removed.map { .integer($0) })),
                        ("early", .integer(l.early)),
                        ("trim_us_per_file", .number(Stats.median(l.trimMicroseconds))),
                        ("unlink_floor_us_per_file", .array(l.floorMicroseconds.map { .number($0) })),
                        ("paired_ratios", .array(l.pairedRatios.map { .number($0) })),
                        ("paired_ratio_median", .number(Stats.median(l.pairedRatios))),
                        ("trash_floor_us_per_file", .array(l.trashFloorMicroseconds.map { .number($0) })),
                        ("trash_paired_ratio_median", .number(Stats.median(l.trashPairedRatios))),
                        ("note", .text(l.note)),
                    ])
                ))
        }
        if let h = half {
            trim.append(
                (
                    "half",
                    .object([
                        ("files", .integer(h.files)),
                        ("removed", .integer(h.removed)),
                        ("cachewarden_s", .number(h.seconds)),
                        ("report_ms", .number(h.reportMs)),
                        ("xargs_rm_files", .integer(h.rmFiles)),
                        ("xargs_rm_s", .number(h.rmSeconds)),
                        ("ratio_xargs_rm", .number(h.rmSeconds.map { h.seconds / $0 })),
                        ("exact_after", .bool(h.exactAfter)),
                    ])
                ))
        }
        return .object(trim)
    }
}
