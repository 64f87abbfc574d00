import CacheWardenService

/// The paced rows: per rate, CacheWarden's CPU and context switches per file beside inotifywait's, as medians with
/// their spread over the rounds, and the ratio of each round's pair.
struct PacedSection: BenchSection {
    var result: PacedResult

    /// "median (min–max)" of `xs` with `places` decimals and `unit`.
    private static func spread(_ xs: [Double], _ places: Int, _ unit: String = "") -> String {
        guard let lo = xs.min(), let hi = xs.max() else { return "n/a" }
        let m = Format.decimal(Stats.median(xs), places) + unit
        return xs.count == 1 ? m : "\(m) (\(Format.decimal(lo, places))–\(Format.decimal(hi, places)))"
    }

    /// CacheWarden ÷ inotifywait, round by round (the rounds both ran).
    static func pairedRatios(_ cw: [PacedRun], _ peer: [PacedRun], _ value: (PacedRun) -> Double) -> [Double] {
        zip(cw, peer).compactMap { a, b in value(b) > 0 ? value(a) / value(b) : nil }
    }

    private func row(_ what: String, rate: Double, places: Int, unit: String, _ value: (PacedRun) -> Double)
        -> Report.Row
    {
        let cw = result.runs("cachewarden", at: rate), peer = result.runs("inotifywait", at: rate)
        let ratios = Self.pairedRatios(cw, peer, value)
        let exact = cw.allSatisfy { $0.exact == true }
        let writer = Stats.median(cw.map(\.writer.rate) + peer.map(\.writer.rate))
        return Report.Row(
            metric:
                "paced \(Format.rate(rate)) files/s × \(Format.decimal(result.seconds, 0)) s (writer \(Format.rate(writer))/s): \(what), "
                + "median of \(cw.count) (spread); totals exact: \(exact ? "yes" : "NO")",
            cachewarden: Self.spread(cw.map(value), places, unit),
            peer: peer.isEmpty
                ? (result.note ?? "n/a") : "inotifywait -m -r: " + Self.spread(peer.map(value), places, unit),
            ratio: ratios.isEmpty ? "n/a" : "×" + Self.spread(ratios, 2))
    }

    var rows: [Report.Row] {
        result.rates.flatMap { rate in
            [
                row("watcher CPU per file", rate: rate, places: 1, unit: " µs", \.cpuPerFile),
                row("watcher context switches per file", rate: rate, places: 2, unit: "", \.switchesPerFile),
            ]
        }
    }

    var jsonKey: String { "paced" }

    var json: JSONValue {
        .object([
            ("note", .text(result.note)),
            ("seconds", .number(result.seconds)),
            ("rounds", .integer(result.rounds)),
            ("file_bytes", .integer(PacedBenchmark.fileSize)),
            ("exact", .flag(result.runs.filter { $0.watcher == "cachewarden" }.allSatisfy { $0.exact == true })),
            ("rates", .array(result.rates.map(rateJSON))),
        ])
    }

    private func rateJSON(_ rate: Double) -> JSONValue {
        let cw = result.runs("cachewarden", at: rate), peer = result.runs("inotifywait", at: rate)
        func numbers(_ runs: [PacedRun], _ value: (PacedRun) -> Double) -> JSONValue {
            .array(runs.map { .number(value($0)) })
        }
        return .object([
            ("files_per_s", .number(rate)),
            ("writer_files_per_s", numbers(cw + peer, \.writer.rate)),
            ("cachewarden_cpu_us_per_file", numbers(cw, \.cpuPerFile)),
            ("inotifywait_cpu_us_per_file", numbers(peer, \.cpuPerFile)),
            ("cachewarden_stat_cpu_us_per_file", numbers(cw, \.statCPUPerFile)),
            ("inotifywait_stat_cpu_us_per_file", numbers(peer, \.statCPUPerFile)),
            ("cpu_ratio", .array(Self.pairedRatios(cw, peer, \.cpuPerFile).map { .number($0) })),
            ("cpu_ratio_median", .number(Stats.median(Self.pairedRatios(cw, peer, \.cpuPerFile)))),
            ("cachewarden_switches_per_file", numbers(cw, \.switchesPerFile)),
            ("inotifywait_switches_per_file", numbers(peer, \.switchesPerFile)),
            ("switches_ratio", .array(Self.pairedRatios(cw, peer, \.switchesPerFile).map { .number($0) })),
            ("switches_ratio_median", .number(Stats.median(Self.pairedRatios(cw, peer, \.switchesPerFile)))),
            ("cachewarden_voluntary_per_file", numbers(cw, \.voluntaryPerFile)),
            ("inotifywait_voluntary_per_file", numbers(peer, \.voluntaryPerFile)),
            ("cachewarden_threads", .array(cw.map { .integer($0.activity.threads) })),
            ("cachewarden_overflows", .array(cw.map { .integer($0.overflows) })),
            ("exact", .array(cw.map { .flag($0.exact) })),
        ])
    }
}
