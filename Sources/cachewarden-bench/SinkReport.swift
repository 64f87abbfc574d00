import CacheWardenService

extension SinkResult: BenchSection {
    var rows: [Report.Row] {
        let s = self
        var rows: [Report.Row] = []
        rows.append(
            Report.Row(
                metric: "JSON sink: write-event lines/s → /dev/null",
                cachewarden:
                    "\(Format.rate(s.linesPerSecond)) (\(Format.decimal(Double(s.bytes) / 1e6 / s.seconds, 0)) MB/s)",
                peer: "JSONSerialization: \(Format.rate(s.peerLinesPerSecond))",
                ratio: Format.ratio(s.linesPerSecond, s.peerLinesPerSecond)))
        return rows
    }

    var jsonKey: String { "sink" }

    var json: JSONValue {
        let s = self
        return .object([
            ("lines", .integer(s.lines)),
            ("bytes", .integer(s.bytes)),
            ("writes", .integer(s.writes)),
            ("seconds", .number(s.seconds)),
            ("lines_per_s", .number(s.linesPerSecond)),
            ("mb_per_s", .number(Double(s.bytes) / 1e6 / s.seconds)),
            ("sample_events", .integer(s.samples)),
            ("jsonserialization_lines", .integer(s.peerLines)),
            ("jsonserialization_lines_per_s", .number(s.peerLinesPerSecond)),
            ("ratio_jsonserialization", .number(s.linesPerSecond / s.peerLinesPerSecond)),
            ("note", .text(s.note)),
        ])
    }
}
