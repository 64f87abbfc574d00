import CacheWarden
import FoundationEssentials

/// CacheWarden's metrics: counters fed by events, gauges set from a status snapshot, written as Prometheus text
/// (`PrometheusText`). Names carry the `cachewarden_` prefix and base units (bytes, seconds); counters end in
/// `_total`; every family has `# HELP` and `# TYPE` lines. Not thread-safe: `MetricsFileSink` confines it.
final class WardenMetrics {
    static let trimBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// Error kinds that exist (as 0) from the start, so an alert's `increase()` sees their first error too.
    static let alertedErrorKinds = ["delete", "permission", "watch_limit", "client_lock_wait"]

    private var text = PrometheusText()
    /// Gauge names per directory (or group), so a directory that goes away on reload takes its gauges with it:
    /// those set from the snapshot, those set from events (`short_by`, …), and the backend label of each.
    private var dirGauges: [String: [String]] = [:]
    private var eventGauges: [String: Set<String>] = [:]
    private var backends: [String: String] = [:]
    private var groupGauges: [String: [String]] = [:]

    init(startTime: Date = Date(), version: String = CacheWardenVersion.current) {
        gauge(
            "start_time", "seconds", "When this cachewarden process started (Unix time).", [],
            startTime.timeIntervalSince1970)
        gauge("build_info", "", "Always 1; the version is the label.", [("version", version)], 1)
        // Families that must show up (as 0) before their first event, so dashboards and alerts have a series.
        counter("inotify_overflows", Help.overflows, [], by: 0)
        counter("dropped_lines", Help.dropped, [], by: 0)
        for kind in Self.alertedErrorKinds { counter("errors", Help.errors, [("kind", kind)], by: 0) }
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
            record(t, at: event.time)
        case .overflow:
            counter("inotify_overflows", Help.overflows, [])
        case .rescan(let r):
            counter("rescans", Help.rescans, [("dir", r.dir)])
            eventGauge("rescan_drift", "bytes", Help.drift, r.dir, Double(r.drift))
        case .lowDisk(let l):
            for dir in l.dirs {
                counter("low_disk_events", "Free space fell below the low-disk threshold.", [("dir", dir)])
            }
        case .error(let issue):
            counter("errors", Help.errors, [("kind", issue.kind ?? "other")])
        case .dropped(let n):
            counter("dropped_lines", Help.dropped, [], by: Int64(n))
        case .deferred(let d):
            counter(
                "trims_deferred", "Trims that found their client's lock held and wait for it (one per trim).",
                [("dir", d.dir), ("reason", d.reason.rawValue)])
        default:
            break
        }
    }

    private func record(_ t: TrimReport, at time: Date) {
        counter("trims", "Trims run, by why.", [("dir", t.dir), ("reason", t.reason.rawValue)])
        text.observe(
            Self.name("trim_duration", "seconds"), help: "How long trims took.", labels: [("dir", t.dir)],
            buckets: Self.trimBuckets, t.durationMilliseconds / 1000)
        eventGauge(
            "last_trim_timestamp", "seconds", "When the last trim finished (Unix time).", t.dir,
            time.timeIntervalSince1970)
        eventGauge("short_by", "bytes", Help.shortBy, t.dir, Double(t.shortBy))
    }

    // MARK: Snapshot

    /// Sets the gauges from a status snapshot; gauges of directories and groups no longer present are dropped.
    func update(_ dirs: [DirectoryStatus], groups: [GroupSettings], now: Date = Date()) {
        var seen = Set<String>()
        for s in dirs {
            let dir = s.totals.dir
            seen.insert(dir)
            let names = dirGaugeValues(s, now: now).map { name, unit, help, value in
                gauge(name, unit, help, [("dir", dir)], value)
            }
            // A gauge the directory no longer has (its quota went on reload, say) goes.
            for gone in dirGauges[dir] ?? [] where !names.contains(gone) { text.remove(gone, labels: [("dir", dir)]) }
            dirGauges[dir] = names
            setBackend(s.backend, of: dir)
            // Alerts and the dashboard see each directory's series before its first rescan or trim.
            counter("rescans", Help.rescans, [("dir", dir)], by: 0)
            seedEventGauge("rescan_drift", "bytes", Help.drift, dir)
            seedEventGauge("short_by", "bytes", Help.shortBy, dir)
        }
        let gone = Set(dirGauges.keys).union(eventGauges.keys).union(backends.keys).subtracting(seen)
        for dir in gone {
            for name in (dirGauges[dir] ?? []) + (eventGauges[dir] ?? []) { text.remove(name, labels: [("dir", dir)]) }
            setBackend(nil, of: dir)
            dirGauges[dir] = nil
            eventGauges[dir] = nil
        }
        updateGroups(dirs, groups)
    }

    private func dirGaugeValues(_ s: DirectoryStatus, now: Date) -> [(String, String, String, Double)] {
        var values: [(String, String, String, Double)] = [
            (
                "", "bytes", "Bytes counted in the directory (per its size basis; hard links once).",
                Double(s.totals.total)
            ),
            ("files", "", "Regular files counted (hard links once).", Double(s.totals.files)),
            ("quota", "bytes", "The directory's quota (0: none).", Double(s.totals.quota)),
            ("protected", "bytes", "Bytes in protected files (counted, never deleted).", Double(s.protectedBytes)),
        ]
        func add(_ name: String, _ unit: String, _ help: String, _ value: Double?) {
            if let value { values.append((name, unit, help, value)) }
        }
        add("trim_target", "bytes", "The total a quota trim aims for.", s.trimTarget.map(Double.init))
        add("trim_at", "bytes", "The total above which a quota trim starts (trim_at).", s.trimAt.map(Double.init))
        add(
            "hard_quota", "bytes", "With trim_after_idle: the total above which a trim runs at once.",
            s.hardQuota.map(Double.init))
        add("max_files", "", "The directory's max_files.", s.maxFiles.map(Double.init))
        add(
            "oldest_file_age", "seconds", "Age of the oldest counted file.",
            s.oldest.map { max(0, now.timeIntervalSince($0)) })
        add("watches", "", "Directories followed by an inotify watch.", s.watches.map(Double.init))
        add(
            "polled_directories", "", "Directories past the inotify watch limit, polled every poll_interval instead.",
            s.polledDirectories.map(Double.init))
        add(
            "fanotify_directories", "", "Directories past the inotify watch limit, followed by fanotify instead.",
            s.fanotifyDirectories.map(Double.init))
        add("poll_pass_duration", "seconds", "How long the last polling pass took.", s.pollPass?.seconds)
        add(
            "poll_directories_read", "", "Directories the last polling pass re-read.",
            s.pollPass.map { Double($0.directoriesRead) })
        add(
            "filesystem_free", "bytes", "Free bytes for unprivileged users on the directory's filesystem.",
            s.filesystemFree.map(Double.init))
        add(
            "free_low_watermark", "bytes",
            "Free space below which a low-disk purge of the directory's filesystem starts (low_disk_free).",
            s.lowWatermark.map(Double.init))
        add(
            "free_high_watermark", "bytes",
            "Free space a low-disk purge of the directory's filesystem goes on to (low_disk_target).",
            s.highWatermark.map(Double.init))
        if s.clientLock != nil { values += Self.clientLockGauges(s) }
        return values
    }

    /// A directory with a client lock: how long its oldest waiting trim has waited, and whether past
    /// `client_lock_wait` (what the `CacheWardenClientLockHeld` alert reads); 0 when none waits.
    private static func clientLockGauges(_ s: DirectoryStatus) -> [(String, String, String, Double)] {
        [
            (
                "trim_deferred", "seconds",
                "How long the directory's oldest trim waiting for its client's lock has waited (0: none waits).",
                s.deferred?.waitedSeconds ?? 0
            ),
            (
                "client_lock_overdue", "",
                "1 while a trim has waited for its client's lock longer than client_lock_wait.",
                s.deferred?.overdue == true ? 1 : 0
            ),
        ]
    }

    /// `cachewarden_backend_info{dir,backend} 1`, replaced when the backend changes, removed with nil.
    private func setBackend(_ backend: String?, of dir: String) {
        guard backends[dir] != backend else { return }
        let name = Self.name("backend_info", "")
        if let old = backends[dir] { text.remove(name, labels: [("dir", dir), ("backend", old)]) }
        if let backend {
            text.set(
                name, help: "Always 1; the change backend following the directory's tree is the label.",
                labels: [("dir", dir), ("backend", backend)], 1)
        }
        backends[dir] = backend
    }

    private func updateGroups(_ dirs: [DirectoryStatus], _ groups: [GroupSettings]) {
        var seen = Set<String>()
        for g in groups {
            seen.insert(g.name)
            let sum = dirs.filter { $0.group == g.name }.reduce(Int64(0)) { $0 + $1.totals.total }
            let bytes = gauge(
                "group", "bytes", "Bytes counted in the group's directories together.", [("group", g.name)], Double(sum)
            )
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

    /// Sets a per-directory gauge that events feed; it goes when the directory does.
    private func eventGauge(_ name: String, _ unit: String, _ help: String, _ dir: String, _ value: Double) {
        eventGauges[dir, default: []].insert(gauge(name, unit, help, [("dir", dir)], value))
    }

    /// Sets an event-fed gauge to 0 for `dir` unless an event has set it.
    private func seedEventGauge(_ name: String, _ unit: String, _ help: String, _ dir: String) {
        if eventGauges[dir]?.contains(Self.name(name, unit)) != true { eventGauge(name, unit, help, dir, 0) }
    }

    /// Adds `by` to `cachewarden_<name>_total`.
    private func counter(_ name: String, _ help: String, _ labels: [(String, String)], by: Int64 = 1) {
        text.increment(Self.name(name, "total"), help: help, labels: labels, by: by)
    }

    /// Sets `cachewarden_<name>_<unit>`; returns its full name.
    @discardableResult
    private func gauge(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)], _ value: Double)
        -> String
    {
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

/// Help texts of the families written from more than one place (a family has one `# HELP`).
private enum Help {
    static let overflows = "The kernel's inotify queue overflowed (each is followed by a rescan)."
    static let dropped = "Event lines the stdout sink dropped for a slow reader."
    static let errors = "Run-time errors (the watcher went on), by kind."
    static let rescans = "Trees re-read after an overflow."
    static let drift = "Running total minus the re-read total at the last rescan (0 before the first)."
    static let shortBy =
        "Bytes the last trim left above its target because all that was left was spared (0: reached, or no trim yet)."
}
