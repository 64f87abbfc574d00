import CacheWardenService
import Foundation

extension ThroughputResult: BenchSection {
    var rows: [Report.Row] {
        let t = self
        guard let cw = t.cachewarden else { return [] }
        var rows: [Report.Row] = []
        let n = Format.shortCount(t.files)
        let inw = t.inotifywait
        let missing = t.inotifywaitNote ?? "n/a"
        rows.append(
            Report.Row(
                metric: "writer alone: \(n) × \(Format.bytes(Int64(t.size))) files",
                cachewarden: "\(Format.rate(t.baselineRate)) files/s",
                peer: "(no watcher; mean of \(t.alone.map { Format.rate($0.writer.rate) }.joined(separator: ", ")))",
                ratio: ""))
        rows.append(
            Report.Row(
                metric: "writer files/s while watched",
                cachewarden: Format.rate(cw.writer.rate),
                peer: inw.map { "inotifywait: \(Format.rate($0.writer.rate))" } ?? missing,
                ratio: Format.ratio(cw.writer.rate, inw?.writer.rate)))
        rows.append(
            Report.Row(
                metric: "writer slowdown vs unwatched",
                cachewarden: Format.ratio(cw.writer.seconds, t.baselineSeconds),
                peer: inw.map { "inotifywait: \(Format.ratio($0.writer.seconds, t.baselineSeconds))" } ?? missing,
                ratio: Format.ratio(cw.writer.seconds, inw?.writer.seconds)))
        rows.append(
            Report.Row(
                metric: "watcher CPU per 100k files",
                cachewarden: cw.cpuPer100k.map { Format.seconds($0) } ?? "n/a",
                peer: inw.map { "inotifywait: \(Format.seconds($0.cpuPer100k ?? .nan))" } ?? missing,
                ratio: Format.ratio(cw.cpuPer100k, inw?.cpuPer100k)))
        rows.append(
            Report.Row(
                metric: "caught up after the writer's last close",
                cachewarden: cw.catchUpSeconds.map { "+\(Format.seconds($0))" } ?? "never",
                peer: inw.map { w in
                    w.catchUpSeconds == 0
                        ? "inotifywait: kept up (CPU idle at once)"
                        : "inotifywait CPU idle: +\(Format.seconds(w.catchUpSeconds ?? .nan))"
                } ?? missing,
                ratio: ""))
        rows.append(
            Report.Row(
                metric: "files/s until caught up",
                cachewarden: cw.watcherRate.map { Format.rate($0) } ?? "n/a",
                peer: inw.map { "inotifywait: \(Format.rate($0.watcherRate ?? .nan))" } ?? missing,
                ratio: Format.ratio(cw.watcherRate, inw?.watcherRate)))
        rows.append(
            Report.Row(
                metric: "overflow event (rescans)",
                cachewarden: (cw.overflows ?? 0) > 0 ? "yes (\(cw.overflows!), \(cw.rescans ?? 0) rescans)" : "no",
                peer: "inotifywait: not reported", ratio: ""))
        let scan = cw.scan.map { "fresh scan: \(Format.count($0.files)) files, \(Format.count(Int($0.bytes))) B" } ?? ""
        rows.append(
            Report.Row(
                metric: "final totals exact",
                cachewarden: cw.exact == true
                    ? "yes" : "NO (\(cw.watcherTotals.map { "\($0.files) files, \($0.total) B" } ?? "no status"))",
                peer: scan, ratio: ""))
        rows.append(
            Report.Row(
                metric: "write lines emitted (dropped)",
                cachewarden: "\(Format.count(cw.writeLines ?? 0)) (\(cw.dropped ?? 0))",
                peer: "", ratio: ""))
        return rows
    }

    var jsonKey: String { "throughput" }

    var json: JSONValue {
        let t = self
        func watched(_ w: WatchedRun?) -> JSONValue {
            guard let w else { return .null }
            if w.watcher == "none" {
                return .object([
                    ("writer_s", .number(w.writer.seconds)),
                    ("writer_files_per_s", .number(w.writer.rate)),
                    ("writer_errors", .integer(w.writer.errors)),
                ])
            }
            return .object([
                ("writer_s", .number(w.writer.seconds)),
                ("writer_files_per_s", .number(w.writer.rate)),
                ("writer_errors", .integer(w.writer.errors)),
                ("writer_slowdown", .number(w.watcher == "none" ? nil : w.writer.seconds / t.baselineSeconds)),
                ("setup_s", .number(w.setupSeconds)),
                ("cpu_s", .number(w.cpuSeconds)),
                ("cpu_s_per_100k_files", .number(w.cpuPer100k)),
                ("caught_up_after_s", .number(w.catchUpSeconds)),
                ("files_per_s_until_caught_up", .number(w.watcherRate)),
                ("overflows", .integer(w.overflows)),
                ("rescans", .integer(w.rescans)),
                ("final_files", .integer(w.watcherTotals?.files)),
                ("final_total", .integer(w.watcherTotals?.total)),
                ("scan_files", .integer(w.scan?.files)),
                ("scan_bytes", .integer(w.scan?.bytes)),
                ("exact", .flag(w.exact)),
                ("write_lines", .integer(w.writeLines)),
                ("dropped_lines", .integer(w.dropped)),
                ("errors", .array(w.errors.map { .string($0) })),
                ("note", .text(w.note)),
            ])
        }
        let cw = t.cachewarden, inw = t.inotifywait
        return .object([
            ("files", .integer(t.files)),
            ("file_size", .integer(t.size)),
            ("watcher_program", .string(t.watcherProgram)),
            ("warmup_files", .integer(t.warmupFiles)),
            ("alone", .array(t.alone.map { watched($0) })),
            ("baseline_writer_s", .number(t.baselineSeconds)),
            ("baseline_files_per_s", .number(t.baselineRate)),
            ("cachewarden", watched(cw)),
            ("inotifywait", watched(inw)),
            ("inotifywait_note", .text(t.inotifywaitNote)),
            (
                "ratio_cpu_cachewarden_inotifywait",
                .number(cw?.cpuPer100k.flatMap { a in inw?.cpuPer100k.map { a / $0 } })
            ),
            (
                "ratio_writer_cachewarden_inotifywait",
                .number(cw.flatMap { a in inw.map { a.writer.seconds / $0.writer.seconds } })
            ),
        ])
    }
}
