import CacheWarden
import FoundationEssentials

/// CacheWarden's metrics: counters fed by events, gauges set from a status snapshot, written as Prometheus text
/// (`PrometheusText`). Names carry the `cachewarden_` prefix and base units (bytes, seconds); counters end in
/// `_total`; every family has `# HELP` and `# TYPE` lines. Not thread-safe: `MetricsFileSink` confines it.
final class WardenMetrics {
    static let trimBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    private var text = PrometheusText()
    /// Gauge names per directory (or group), so a directory that goes away on reload takes its gauges with it.
    private var dirGauges: [String: [String]] = [:]
    private var groupGauges: [String: [String]] = [:]

    init(startTime: Date = Date(), version: String = CacheWardenVersion.current) {
        gauge("start_time", "seconds", "When this cachewarden process started (Unix time).", [], startTime.timeIntervalSince1970)
        gauge("build_info", "", "Always 1; the version is the label.", [("version", version)], 1)
        // Families that must show up (as 0) before their first event, so dashboards and alerts have a series.
        counter("inotify_overflows", "The kernel's inotify queue overflowed (each is followed by a rescan).", [], by: 0)
    }

    // MARK: Events

    func record(_ events: [WardenEvent]) {
        for e in events { record(e) }
    }

    private func record(_ event: WardenEvent) {
        switch event.kind {
        case .write(let w):
            counter("write_events", "Files written and closed, or moved in.", [("dir", w.dir)])
        case .evict(let e) where !e.dryRun:
            let labels = [("dir", e.dir), ("reason", e.reason.rawValue)]
            counter("evictions", "Files (or evict units) deleted by cachewarden.", labels)
            counter("evicted_bytes", "Bytes freed by deletions.", labels, by: e.size)
        case .trim(let t) where !t.dryRun:
            counter("trims", "Trims run, by why.", [("dir", t.dir), ("reason", t.reason.rawValue)])
            text.observe(Self.name("trim_duration", "seconds"), help: "How long trims took.", labels: [("dir", t.dir)],
                         buckets: Self.trimBuckets, t.durationMilliseconds / 1000)
        case .overflow:
            counter("inotify_overflows", "The kernel's inotify queue overflowed (each is followed by a rescan).", [])
        case .rescan(let r):
            counter("rescans", "Trees re-read after an overflow.", [("dir", r.dir)])
            gauge("rescan_drift", "bytes", "Running total minus the re-read total at the last rescan.", [("dir", r.dir)],
                  Double(r.drift))
        case .lowDisk(let l):
            for dir in l.dirs {
                counter("low_disk_events", "Free space fell below the low-disk threshold.", [("dir", dir)])
            }
        case .error(let issue):
            counter("errors", "Run-time errors (the watcher went on), by kind.", [("kind", issue.kind ?? "other")])
        case .dropped(let n):
            counter("dropped_lines", "Event lines the stdout sink dropped for a slow reader.", [], by: Int64(n))
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
            let values = dirGaugeValues(s, now: now)
            let names = values.map { name, unit, help, value in gauge(name, unit, help, [("dir", s.totals.dir)], value) }
            // A gauge the directory no longer has (its quota went on reload, say) goes.
            for gone in dirGauges[s.totals.dir] ?? [] where !names.contains(gone) {
                text.remove(gone, labels: [("dir", s.totals.dir)])
            }
            dirGauges[s.totals.dir] = names
        }
        for (dir, names) in dirGauges where !seen.contains(dir) {
            for name in names { text.remove(name, labels: [("dir", dir)]) }
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
        if let pass = s.pollPass {
            values.append(("poll_pass_duration", "seconds", "How long the last polling pass took.", pass.seconds))
            values.append(("poll_directories_read", "", "Directories the last polling pass re-read.", Double(pass.directoriesRead)))
        }
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
            let bytes = gauge("group", "bytes", "Bytes counted in the group's directories together.", [("group", g.name)], Double(sum))
            let quota = gauge("group_quota", "bytes", "The group's shared quota.", [("group", g.name)], Double(g.quota))
            groupGauges[g.name] = [bytes, quota]
        }
        for (group, names) in groupGauges where !seen.contains(group) {
            for name in names { text.remove(name, labels: [("group", group)]) }
            groupGauges[group] = nil
        }
    }

    /// The exposition text (format 0.0.4, what node_exporter's textfile collector reads).
    func render() -> [UInt8] { text.render() }

    // MARK: Names

    /// Adds `by` to `cachewarden_<name>_total`.
    private func counter(_ name: String, _ help: String, _ labels: [(String, String)], by: Int64 = 1) {
        text.increment(Self.name(name, "total"), help: help, labels: labels, by: by)
    }

    /// Sets `cachewarden_<name>_<unit>`; returns its full name.
    @discardableResult
    private func gauge(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)], _ value: Double) -> String {
        let full = Self.name(name, unit)
        text.set(full, help: help, labels: labels, value)
        return full
    }

    /// `cachewarden_<name>_<unit>`; an empty name gives `cachewarden_<unit>` (`cachewarden_bytes`), an empty unit
    /// `cachewarden_<name>`.
    static func name(_ name: String, _ unit: String) -> String {
        ["cachewarden", name, unit].filter { !$0.isEmpty }.joined(separator: "_")
    }
}
