import FoundationEssentials
import Prometheus

/// CacheWarden's metrics in swift-prometheus's registry: counters fed by events, gauges set from a status snapshot.
/// Names carry the `cachewarden_` prefix and base units (bytes, seconds); counters end in `_total`; every family
/// has `# HELP` and `# TYPE` lines (the registry writes them). Not thread-safe: `MetricsFileSink` confines it.
final class WardenMetrics {
    static let trimBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    private let registry = PrometheusCollectorRegistry()
    /// Gauges per directory (or group), so a directory that goes away on reload takes its gauges with it.
    private var dirGauges: [String: [Gauge]] = [:]
    private var groupGauges: [String: [Gauge]] = [:]

    init(startTime: Date = Date(), version: String = CacheWardenVersion.current) {
        gauge("start_time", "seconds", "When this cachewarden process started (Unix time).", []).set(startTime.timeIntervalSince1970)
        gauge("build_info", "", "Always 1; the version is the label.", [("version", version)]).set(1.0)
        // Families that must show up (as 0) before their first event, so dashboards and alerts have a series.
        _ = counter("inotify_overflows", "The kernel's inotify queue overflowed (each is followed by a rescan).", [])
    }

    // MARK: Events

    func record(_ events: [WardenEvent]) {
        for e in events { record(e) }
    }

    private func record(_ event: WardenEvent) {
        switch event.kind {
        case .write(let w):
            counter("write_events", "Files written and closed, or moved in.", [("dir", w.dir)]).increment()
        case .evict(let e) where !e.dryRun:
            let labels = [("dir", e.dir), ("reason", e.reason.rawValue)]
            counter("evictions", "Files (or evict units) deleted by cachewarden.", labels).increment()
            counter("evicted_bytes", "Bytes freed by deletions.", labels).increment(by: e.size)
        case .trim(let t) where !t.dryRun:
            counter("trims", "Trims run, by why.", [("dir", t.dir), ("reason", t.reason.rawValue)]).increment()
            registry.makeValueHistogram(descriptor: Self.name("trim_duration", "seconds", "How long trims took."),
                                        labels: [("dir", t.dir)], buckets: Self.trimBuckets)
                .record(t.durationMilliseconds / 1000)
        case .overflow:
            counter("inotify_overflows", "The kernel's inotify queue overflowed (each is followed by a rescan).", []).increment()
        case .rescan(let r):
            counter("rescans", "Trees re-read after an overflow.", [("dir", r.dir)]).increment()
            gauge("rescan_drift", "bytes", "Running total minus the re-read total at the last rescan.", [("dir", r.dir)])
                .set(r.drift)
        case .lowDisk(let l):
            for dir in l.dirs {
                counter("low_disk_events", "Free space fell below the low-disk threshold.", [("dir", dir)]).increment()
            }
        case .error(let issue):
            counter("errors", "Run-time errors (the watcher went on), by kind.", [("kind", issue.kind ?? "other")]).increment()
        case .dropped(let n):
            counter("dropped_lines", "Event lines the stdout sink dropped for a slow reader.", []).increment(by: Int64(n))
        default:
            break
        }
    }

    // MARK: Snapshot

    /// Sets the gauges from a status snapshot; gauges of directories and groups no longer present are dropped.
    func update(_ dirs: [DirectoryStatus], groups: [GroupSettings], now: Date = Date()) {
        var seen = Set<String>()
        for s in dirs {
            seen.insert(s.totals.dir)
            dirGauges[s.totals.dir] = dirGaugeValues(s, now: now).map { name, unit, help, value in
                let g = gauge(name, unit, help, [("dir", s.totals.dir)])
                g.set(value)
                return g
            }
        }
        for (dir, gauges) in dirGauges where !seen.contains(dir) {
            for g in gauges { registry.unregisterGauge(g) }
            dirGauges[dir] = nil
        }
        updateGroups(dirs, groups)
    }

    private func dirGaugeValues(_ s: DirectoryStatus, now: Date) -> [(String, String, String, Double)] {
        var values: [(String, String, String, Double)] = [
            ("", "bytes", "Bytes counted in the directory (per its size basis; hard links once).", Double(s.totals.total)),
            ("files", "", "Regular files counted (hard links once).", Double(s.totals.files)),
            ("quota", "bytes", "The directory's quota (0: none).", Double(s.totals.quota)),
            ("protected", "bytes", "Bytes in protected files (counted, never deleted).", Double(s.protectedBytes)),
        ]
        if let target = s.trimTarget { values.append(("trim_target", "bytes", "The total a quota trim aims for.", Double(target))) }
        if let oldest = s.oldest {
            values.append(("oldest_file_age", "seconds", "Age of the oldest counted file.", max(0, now.timeIntervalSince(oldest))))
        }
        if let watches = s.watches { values.append(("watches", "", "Directories followed by an inotify watch.", Double(watches))) }
        if let free = s.filesystemFree {
            values.append(("filesystem_free", "bytes", "Free bytes for unprivileged users on the directory's filesystem.", Double(free)))
        }
        return values
    }

    private func updateGroups(_ dirs: [DirectoryStatus], _ groups: [GroupSettings]) {
        var seen = Set<String>()
        for g in groups {
            seen.insert(g.name)
            let sum = dirs.filter { $0.group == g.name }.reduce(Int64(0)) { $0 + $1.totals.total }
            let bytes = gauge("group", "bytes", "Bytes counted in the group's directories together.", [("group", g.name)])
            let quota = gauge("group_quota", "bytes", "The group's shared quota.", [("group", g.name)])
            bytes.set(sum)
            quota.set(g.quota)
            groupGauges[g.name] = [bytes, quota]
        }
        for (name, gauges) in groupGauges where !seen.contains(name) {
            for g in gauges { registry.unregisterGauge(g) }
            groupGauges[name] = nil
        }
    }

    /// The exposition text (format 0.0.4, what node_exporter's textfile collector reads).
    func render() -> [UInt8] {
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }

    // MARK: Names

    /// `cachewarden_<name>_total`.
    private func counter(_ name: String, _ help: String, _ labels: [(String, String)]) -> Counter {
        registry.makeCounter(descriptor: Self.name(name, "total", help), labels: labels)
    }

    private func gauge(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)]) -> Gauge {
        registry.makeGauge(descriptor: Self.name(name, unit, help), labels: labels)
    }

    /// `cachewarden_<name>_<unit>`; an empty name gives `cachewarden_<unit>` (`cachewarden_bytes`).
    static func name(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        name.isEmpty
            ? MetricNameDescriptor(namespace: "cachewarden", metricName: unit, unitName: "", helpText: help)
            : MetricNameDescriptor(namespace: "cachewarden", metricName: name, unitName: unit, helpText: help)
    }
}
