import Foundation

extension WardenEvent {
    /// The event as one JSON object on one line (ending in `\n`), exactly as `cachewarden run` prints it.
    public func jsonLine() -> String {
        String(decoding: jsonLineBytes(), as: UTF8.self)
    }

    /// The event as UTF-8 bytes of one JSON line, for writers that avoid `String`.
    public func jsonLineBytes() -> [UInt8] {
        var j = JSONLineBuilder()
        j.add("event", name)
        j.add("time", RFC3339.format(secondsSince1970: time.timeIntervalSince1970))
        switch kind {
        case .ready(let t), .status(let t), .stop(let t):
            j.add("dir", t.dir)
            if case .ready = kind { j.add("path", t.path) }
            j.add("total", t.total)
            j.add("files", t.files)
            j.add("quota", t.quota)
        case .write(let w):
            j.add("dir", w.dir)
            j.add("file", w.file)
            j.add("size", w.size)
            j.add("total", w.total)
            j.add("files", w.files)
            j.add("quota", w.quota)
        case .evict(let e):
            j.add("dir", e.dir)
            j.add("file", e.file)
            j.add("size", e.size)
            j.add("reason", e.reason.rawValue)
            if e.dryRun { j.add("dry_run", true) }
        case .trim(let t):
            j.add("dir", t.dir)
            j.add("reason", t.reason.rawValue)
            j.add("removed", t.removed)
            j.add("freed", t.freed)
            j.add("total_before", t.totalBefore)
            j.add("total", t.total)
            j.add("quota", t.quota)
            j.add("target", t.target)
            j.add("duration_ms", t.durationMilliseconds)
            if t.shortBy > 0 { j.add("short_by", t.shortBy) }
            if t.dryRun { j.add("dry_run", true) }
        case .overflow:
            break
        case .rescan(let r):
            j.add("dir", r.dir)
            j.add("drift", r.drift)
            j.add("total", r.total)
            j.add("files", r.files)
        case .lowDisk(let l):
            j.add("mount", l.mount)
            j.add("free", l.free)
            j.add("size", l.size)
            j.add("threshold", l.threshold)
            j.add("dirs", l.dirs)
            j.add("bytes_per_s", l.bytesPerSecond)
            j.add("seconds_to_full", l.secondsToFull)
        case .clear(let c):
            j.add("phase", c.phase.rawValue)
            j.add("progress", c.progress)
            j.add("dirs", c.dirs)
            if c.phase == .done {
                j.add("freed", c.freed)
                j.add("removed", c.removed)
            }
            if c.dryRun { j.add("dry_run", true) }
        case .dropped(let count):
            j.add("count", count)
        case .error(let e):
            j.add("message", e.message)
            j.add("dir", e.dir)
            j.add("file", e.file)
            j.add("kind", e.kind)
        }
        return j.finish()
    }
}
