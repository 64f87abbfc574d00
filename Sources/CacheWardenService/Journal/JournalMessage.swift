import CacheWarden

/// The `MESSAGE=` and `PRIORITY=` of each event's journal record: what `journalctl` shows on its line, and how
/// `journalctl -p` filters it. The fields hold the numbers; the sentence is for a person reading the log.
enum JournalMessage {
    /// syslog levels (`PRIORITY=`), by event:
    /// - 3 (err): `error` — something failed (a deletion, a watch, a reload).
    /// - 4 (warning): `low_disk`; `dropped` (events were lost); `overflow` (totals unsure until the rescan);
    ///   a `trim` that fell short of its target (`short_by`): the quota cannot be met.
    /// - 5 (notice): `trim` (files were deleted: the record an operator looks for), `clear`, `rescan`, `deferred`
    ///   (a trim waits for its client's lock: normal while the client runs).
    /// - 6 (info): `evict` (one per file, the detail under a trim), `ready`, `stop`, `status`.
    /// - 7 (debug): `write` — the most frequent event by far, normal operation; `journalctl -p info` hides it.
    static func priority(_ event: WardenEvent) -> Int {
        switch event.kind {
        case .error: 3
        case .lowDisk, .dropped, .overflow: 4
        case .trim(let t): t.shortBy > 0 || (t.filesShortBy ?? 0) > 0 ? 4 : 5
        case .clear, .rescan, .deferred: 5
        case .evict, .ready, .stop, .status: 6
        case .write: 7
        }
    }

    /// One readable sentence, e.g. `npm: trim (quota) removed 12 files, freed 1.2 GiB; now 4.8 GiB of 10 GiB`.
    static func sentence(_ event: WardenEvent) -> String {
        switch event.kind {
        case .ready(let t): "\(t.dir): watching \(t.path), \(totals(t.total, t.files, t.quota))"
        case .status(let t): "\(t.dir): \(totals(t.total, t.files, t.quota))"
        case .stop(let t): "\(t.dir): stopped, \(totals(t.total, t.files, t.quota))"
        case .write(let w): "\(w.dir): wrote \(w.file) (\(iec(w.size))); now \(totals(w.total, w.files, w.quota))"
        case .evict(let e):
            "\(e.dir): \(e.dryRun ? "would evict" : "evicted") \(e.file) (\(iec(e.size)), \(e.reason.rawValue))"
        case .trim(let t): trim(t)
        case .overflow: "the kernel's event queue overflowed; the directories are re-read"
        case .rescan(let r): "\(r.dir): re-read, drift \(r.drift) bytes; now \(totals(r.total, r.files, 0))"
        case .lowDisk(let l): lowDisk(l)
        case .clear(let c):
            "clear \(c.dirs.joined(separator: ", ")): \(c.phase.rawValue.replacing("_", with: " "))"
                + (c.phase == .done ? ", removed \(c.removed) files, freed \(iec(c.freed))" : "")
                + (c.dryRun ? " (dry run)" : "")
        case .dropped(let n): "\(n) events dropped: their reader was too slow"
        case .error(let e): (e.dir.map { "\($0): " } ?? "") + e.message + (e.file.map { " (\($0))" } ?? "")
        case .deferred(let d):
            "\(d.dir): \(d.reason.rawValue) trim deferred: \(d.busy)"
                + (d.retrySeconds.map { "; next try in \(Int($0)) s" } ?? "")
        }
    }

    private static func iec(_ bytes: Int64) -> String { ByteText.iec(bytes) }

    private static func totals(_ total: Int64, _ files: Int, _ quota: Int64) -> String {
        "\(iec(total)) in \(files) files" + (quota > 0 ? " of \(iec(quota)) quota" : "")
    }

    private static func trim(_ t: TrimReport) -> String {
        var s =
            "\(t.dir): trim (\(t.reason.rawValue)) \(t.dryRun ? "would remove" : "removed") \(t.removed) files, "
            + "freed \(iec(t.freed)); now \(iec(t.total))"
        if t.quota > 0 { s += " of \(iec(t.quota)) quota" }
        if t.shortBy > 0 { s += "; short of the target by \(iec(t.shortBy))" }
        if t.held { s += "; held: a large file is still being written" }
        if let why = t.skipped { s += "; gave nothing to the shared trim: \(why.rawValue)" }
        return s
    }

    private static func lowDisk(_ l: LowDiskReport) -> String {
        var s = "low disk on \(l.mount): \(iec(l.free)) free of \(iec(l.size)), below \(iec(l.threshold))"
        if !l.dirs.isEmpty { s += " (\(l.dirs.joined(separator: ", ")))" }
        if let t = l.secondsToFull, t.isFinite { s += "; full in about \(Int(t / 60)) min" }
        return s
    }
}
