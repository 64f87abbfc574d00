import CacheWardenService

/// The index section: one result per tree size.
struct IndexSection: BenchSection {
    var results: [IndexResult]
    var runs: Int

    var rows: [Report.Row] {
        results.flatMap { r -> [Report.Row] in
            let n = Format.shortCount(r.tree.files)
            return [
                Report.Row(
                    metric: "index \(n) files: start→ready (median of \(runs))",
                    cachewarden: Format.seconds(r.cachewardenMedian),
                    peer: r.du.isEmpty ? "du missing" : "du -s: \(Format.seconds(r.duMedian))",
                    ratio: Format.ratio(r.cachewardenMedian, r.du.isEmpty ? nil : r.duMedian)),
                Report.Row(
                    metric: "index \(n) files vs inotifywait -r",
                    cachewarden: Format.seconds(r.cachewardenMedian),
                    peer: r.inotifywaitMedian.map { "inotifywait: \(Format.seconds($0))" }
                        ?? (r.inotifywaitNote ?? "n/a"),
                    ratio: Format.ratio(r.cachewardenMedian, r.inotifywaitMedian)),
                Report.Row(
                    metric: "index \(n) files: floor walk, \(r.floor.threads) threads (stat only, no watch, no ledger)",
                    cachewarden: Format.seconds(Stats.median(r.floor.plain)),
                    peer: r.du.isEmpty ? "du missing" : "du -s: \(Format.seconds(r.duMedian))",
                    ratio: Format.ratio(Stats.median(r.floor.plain), r.du.isEmpty ? nil : r.duMedian)),
                Report.Row(
                    metric: "index \(n) files: floor walk with two watches a folder",
                    cachewarden: Format.seconds(Stats.median(r.floor.watched)),
                    peer: r.du.isEmpty ? "du missing" : "du -s: \(Format.seconds(r.duMedian))",
                    ratio: Format.ratio(Stats.median(r.floor.watched), r.du.isEmpty ? nil : r.duMedian)),
                Report.Row(
                    metric: "index \(n) files: start→ready vs that floor walk",
                    cachewarden: Format.seconds(r.cachewardenMedian),
                    peer: "floor: \(Format.seconds(Stats.median(r.floor.watched)))",
                    ratio: Format.ratio(r.cachewardenMedian, Stats.median(r.floor.watched))),
                Report.Row(
                    metric: "memory \(n) files: RSS growth after ready",
                    cachewarden: "\(Format.decimal(r.rssBytesPerFile, 0)) B/file",
                    peer: "peak: \(Format.decimal(r.hwmBytesPerFile, 0)) B/file", ratio: ""),
            ]
                + (r.userView.map { v in
                    [
                        Report.Row(
                            metric: "index \(n) files as a user sees it: cachewarden run → ready, paired with du -s",
                            cachewarden: Format.seconds(v.cachewardenMedian),
                            peer: "du -s: \(Format.seconds(v.duMedian))",
                            ratio: "×\(Format.decimal(v.ratioToDu, 2))"),
                        Report.Row(
                            metric: "memory \(n) files as a user sees it: RSS after ready − idle watcher's",
                            cachewarden: "\(Format.decimal(v.bytesPerFile, 0)) B/file",
                            peer: "idle: \(Format.bytes(v.idleRSS))", ratio: ""),
                    ]
                } ?? [])
        }
    }

    var jsonKey: String { "index" }

    var json: JSONValue {
        .array(
            results.map { r in
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
                    ("floor_threads", .integer(r.floor.threads)),
                    ("floor_s", .array(r.floor.plain.map { .number($0) })),
                    ("floor_watched_s", .array(r.floor.watched.map { .number($0) })),
                    ("ratio_floor_watched", .number(r.ratioToFloor)),
                    ("inotifywait_s", r.inotifywait.map { .array($0.map { .number($0) }) } ?? .null),
                    ("inotifywait_median_s", .number(r.inotifywaitMedian)),
                    ("inotifywait_note", .text(r.inotifywaitNote)),
                    ("ratio_du", .number(r.du.isEmpty ? nil : r.cachewardenMedian / r.duMedian)),
                    ("ratio_inotifywait", .number(r.inotifywaitMedian.map { r.cachewardenMedian / $0 })),
                    ("peak_rss_bytes_per_file", .number(r.hwmBytesPerFile)),
                    ("rss_bytes_per_file", .number(r.rssBytesPerFile)),
                    (
                        "user_view",
                        r.userView.map { v in
                            .object([
                                ("cachewarden_s", .array(v.pairs.map { .number($0.cachewarden) })),
                                ("du_s", .array(v.pairs.map { .number($0.du) })),
                                ("ratio_du_median_of_pairs", .number(v.ratioToDu)),
                                ("rss_after_ready_bytes", .array(v.rssAfterReady.map { .integer($0) })),
                                ("idle_rss_bytes", .integer(v.idleRSS)),
                                ("rss_bytes_per_file_above_idle", .number(v.bytesPerFile)),
                            ])
                        } ?? .null
                    ),
                    (
                        "ledger_bytes_per_file",
                        .object(
                            (r.cachewarden.first?.ledger ?? [:]).sorted { $0.key < $1.key }.map {
                                ($0.key, .number(Double($0.value) / Double(max(1, r.countedFiles))))
                            })
                    ),
                ])
            })
    }
}
