import Foundation

/// Everything one benchmark run measured, printed as a table and as a JSON summary.
struct Report {
    var env: Environment
    var mode: String
    var workDirectory: String
    var runs: Int
    var index: [IndexResult] = []
    var throughput: ThroughputResult?
    var trimLatency: TrimLatencyResult?
    var halfTrim: HalfTrimResult?
    var sink: SinkResult?
    /// Sections that failed, with why.
    var failures: [String] = []
    var wallSeconds: Double = 0

    /// One row of the table.
    struct Row {
        var metric: String
        var cachewarden: String
        var peer: String
        var ratio: String
    }

    // MARK: Table

    /// The rows, section by section (ratio = CacheWarden ÷ peer).
    var rows: [Row] {
        var rows: [Row] = []
        for r in index {
            let n = Format.shortCount(r.tree.files)
            rows.append(Row(metric: "index \(n) files: start→ready (median of \(runs))",
                            cachewarden: Format.seconds(r.cachewardenMedian),
                            peer: r.du.isEmpty ? "du missing" : "du -s: \(Format.seconds(r.duMedian))",
                            ratio: Format.ratio(r.cachewardenMedian, r.du.isEmpty ? nil : r.duMedian)))
            rows.append(Row(metric: "index \(n) files vs inotifywait -r",
                            cachewarden: Format.seconds(r.cachewardenMedian),
                            peer: r.inotifywaitMedian.map { "inotifywait: \(Format.seconds($0))" } ?? (r.inotifywaitNote ?? "n/a"),
                            ratio: Format.ratio(r.cachewardenMedian, r.inotifywaitMedian)))
            rows.append(Row(metric: "memory \(n) files: peak RSS growth",
                            cachewarden: "\(Format.decimal(r.hwmBytesPerFile, 0)) B/file",
                            peer: "RSS growth: \(Format.decimal(r.rssBytesPerFile, 0)) B/file", ratio: ""))
        }
        if let t = throughput, let cw = t.cachewarden {
            let n = Format.shortCount(t.files)
            let inw = t.inotifywait
            let missing = t.inotifywaitNote ?? "n/a"
            rows.append(Row(metric: "writer alone: \(n) × \(Format.bytes(Int64(t.size))) files",
                            cachewarden: "\(Format.rate(t.baselineRate)) files/s",
                            peer: "(no watcher; mean of \(t.alone.map { Format.rate($0.writer.rate) }.joined(separator: ", ")))",
                            ratio: ""))
            rows.append(Row(metric: "writer files/s while watched",
                            cachewarden: Format.rate(cw.writer.rate),
                            peer: inw.map { "inotifywait: \(Format.rate($0.writer.rate))" } ?? missing,
                            ratio: Format.ratio(cw.writer.rate, inw?.writer.rate)))
            rows.append(Row(metric: "writer slowdown vs unwatched",
                            cachewarden: Format.ratio(cw.writer.seconds, t.baselineSeconds),
                            peer: inw.map { "inotifywait: \(Format.ratio($0.writer.seconds, t.baselineSeconds))" } ?? missing,
                            ratio: Format.ratio(cw.writer.seconds, inw?.writer.seconds)))
            rows.append(Row(metric: "watcher CPU per 100k files",
                            cachewarden: cw.cpuPer100k.map { Format.seconds($0) } ?? "n/a",
                            peer: inw.map { "inotifywait: \(Format.seconds($0.cpuPer100k ?? .nan))" } ?? missing,
                            ratio: Format.ratio(cw.cpuPer100k, inw?.cpuPer100k)))
            rows.append(Row(metric: "caught up after the writer's last close",
                            cachewarden: cw.catchUpSeconds.map { "+\(Format.seconds($0))" } ?? "never",
                            peer: inw.map { w in
                                w.catchUpSeconds == 0 ? "inotifywait: kept up (CPU idle at once)"
                                    : "inotifywait CPU idle: +\(Format.seconds(w.catchUpSeconds ?? .nan))" } ?? missing,
                            ratio: ""))
            rows.append(Row(metric: "files/s until caught up",
                            cachewarden: cw.watcherRate.map { Format.rate($0) } ?? "n/a",
                            peer: inw.map { "inotifywait: \(Format.rate($0.watcherRate ?? .nan))" } ?? missing,
                            ratio: Format.ratio(cw.watcherRate, inw?.watcherRate)))
            rows.append(Row(metric: "overflow event (rescans)",
                            cachewarden: (cw.overflows ?? 0) > 0 ? "yes (\(cw.overflows!), \(cw.rescans ?? 0) rescans)" : "no",
                            peer: "inotifywait: not reported", ratio: ""))
            let scan = cw.scan.map { "fresh scan: \(Format.count($0.files)) files, \(Format.count(Int($0.bytes))) B" } ?? ""
            rows.append(Row(metric: "final totals exact",
                            cachewarden: cw.exact == true ? "yes" : "NO (\(cw.watcherTotals.map { "\($0.files) files, \($0.total) B" } ?? "no status"))",
                            peer: scan, ratio: ""))
            rows.append(Row(metric: "write lines emitted (dropped)",
                            cachewarden: "\(Format.count(cw.writeLines ?? 0)) (\(cw.dropped ?? 0))",
                            peer: "", ratio: ""))
        }
        if let l = trimLatency {
            let label = "\(l.latenciesMs.count) trims of ~\(Format.count(l.filesPerTrim)) files"
            rows.append(Row(metric: "quota trim latency p50 (close→trim event)",
                            cachewarden: Format.ms(Stats.percentile(l.latenciesMs, 50)), peer: label, ratio: ""))
            rows.append(Row(metric: "quota trim latency p99",
                            cachewarden: Format.ms(Stats.percentile(l.latenciesMs, 99)),
                            peer: l.early > 0 ? "\(l.early) early (0 ms)" : "", ratio: ""))
            rows.append(Row(metric: "quota trim duration p50 (report)",
                            cachewarden: Format.ms(Stats.percentile(l.trimDurationsMs, 50)),
                            peer: "removed p50: \(Int(Stats.percentile(l.removed.map(Double.init), 50))) files", ratio: ""))
        }
        if let h = halfTrim {
            rows.append(Row(metric: "trim half of \(Format.shortCount(h.files)) files (\(Format.count(h.removed)) removed)",
                            cachewarden: Format.seconds(h.seconds),
                            peer: h.rmSeconds.map { "xargs -0 rm: \(Format.seconds($0))" } ?? "xargs missing",
                            ratio: Format.ratio(h.seconds, h.rmSeconds)))
            rows.append(Row(metric: "totals exact after that trim",
                            cachewarden: h.exactAfter ? "yes" : "NO", peer: "", ratio: ""))
        }
        if let s = sink {
            rows.append(Row(metric: "JSON sink: write-event lines/s → /dev/null",
                            cachewarden: "\(Format.rate(s.linesPerSecond)) (\(Format.decimal(Double(s.bytes) / 1e6 / s.seconds, 0)) MB/s)",
                            peer: "JSONSerialization: \(Format.rate(s.peerLinesPerSecond))",
                            ratio: Format.ratio(s.linesPerSecond, s.peerLinesPerSecond)))
        }
        return rows
    }

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
        if let t = throughput { out.append("throughput watcher: \(t.watcherProgram)") }
        out.append("ratio = cachewarden ÷ peer (times: lower is better for cachewarden; rates: higher is)")
        out.append("")
        out.append(line(header))
        out.append(String(repeating: "-", count: w0 + w1 + w2 + 12))
        out += rows.map(line)
        for f in failures { out.append("FAILED: \(f)") }
        out.append("")
        out.append("total wall time: \(Format.seconds(wallSeconds))")
        return out.joined(separator: "\n")
    }

    // MARK: JSON

    /// The machine-readable summary.
    func json() -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("mode", .string(mode)),
            ("work_dir", .string(workDirectory)),
            ("runs_per_median", .integer(runs)),
            ("environment", .object([
                ("filesystem", .string(env.mountType)),
                ("stat_f_type", .string(env.statFilesystem)),
                ("mount_point", .string(env.mountPoint)),
                ("device", .string(env.mountDevice)),
                ("cpus", .integer(env.cpus)),
                ("kernel", .string(env.kernel)),
                ("max_user_watches", .integer(env.maxUserWatches)),
                ("max_queued_events", .integer(env.maxQueuedEvents)),
                ("inotifywait", .text(env.inotifywait)),
                ("du", .text(env.du)),
                ("watcher_child", .string(env.cli.map { "cachewarden CLI \($0)" } ?? "not found")),
            ])),
        ]
        members.append(("index", .array(index.map { r in
            .object([
                ("files", .integer(r.tree.files)),
                ("directories", .integer(r.tree.directories)),
                ("bytes", .integer(r.tree.bytes)),
                ("sparse", .bool(r.tree.sparse)),
                ("build_s", .number(r.tree.seconds)),
                ("cachewarden_s", .array(r.cachewarden.map { .number($0.seconds) })),
                ("cachewarden_median_s", .number(r.cachewardenMedian)),
                ("counted_files", .integer(r.countedFiles)),
                ("counted_bytes", .integer(r.cachewarden.first?.total)),
                ("du_s", .array(r.du.map { .number($0) })),
                ("du_median_s", r.du.isEmpty ? .null : .number(r.duMedian)),
                ("du_kib", .integer(r.duKiB)),
                ("inotifywait_s", r.inotifywait.map { .array($0.map { .number($0) }) } ?? .null),
                ("inotifywait_median_s", .number(r.inotifywaitMedian)),
                ("inotifywait_note", .text(r.inotifywaitNote)),
                ("ratio_du", .number(r.du.isEmpty ? nil : r.cachewardenMedian / r.duMedian)),
                ("ratio_inotifywait", .number(r.inotifywaitMedian.map { r.cachewardenMedian / $0 })),
                ("peak_rss_bytes_per_file", .number(r.hwmBytesPerFile)),
                ("rss_bytes_per_file", .number(r.rssBytesPerFile)),
                ("peak_rss_before_bytes", .integer(r.cachewarden.first?.before.hwmBytes)),
                ("peak_rss_after_bytes", .integer(r.cachewarden.first?.after.hwmBytes)),
            ])
        })))
        if let t = throughput {
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
            members.append(("throughput", .object([
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
                ("ratio_cpu_cachewarden_inotifywait", .number(cw?.cpuPer100k.flatMap { a in inw?.cpuPer100k.map { a / $0 } })),
                ("ratio_writer_cachewarden_inotifywait", .number(cw.flatMap { a in inw.map { a.writer.seconds / $0.writer.seconds } })),
            ])))
        }
        if trimLatency != nil || halfTrim != nil {
            var trim: [(String, JSONValue)] = []
            if let l = trimLatency {
                trim.append(("latency", .object([
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
                    ("note", .text(l.note)),
                ])))
            }
            if let h = halfTrim {
                trim.append(("half", .object([
                    ("files", .integer(h.files)),
                    ("removed", .integer(h.removed)),
                    ("cachewarden_s", .number(h.seconds)),
                    ("report_ms", .number(h.reportMs)),
                    ("xargs_rm_files", .integer(h.rmFiles)),
                    ("xargs_rm_s", .number(h.rmSeconds)),
                    ("ratio_xargs_rm", .number(h.rmSeconds.map { h.seconds / $0 })),
                    ("exact_after", .bool(h.exactAfter)),
                ])))
            }
            members.append(("trim", .object(trim)))
        }
        if let s = sink {
            members.append(("sink", .object([
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
            ])))
        }
        members.append(("failures", .array(failures.map { .string($0) })))
        members.append(("wall_s", .number(wallSeconds)))
        return .object(members)
    }
}
