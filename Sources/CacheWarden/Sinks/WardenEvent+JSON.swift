import FoundationEssentials

extension WardenEvent {
    /// The event as one JSON object on one line (ending in `\n`), exactly as `cachewarden run` prints it.
    public func jsonLine() -> String {
        String(decoding: jsonLineBytes(), as: UTF8.self)
    }

    /// The event as UTF-8 bytes of one JSON line, for writers that avoid `String`.
    public func jsonLineBytes() -> [UInt8] {
        var j = JSONLineBuilder()
        writeFields(into: &j)
        return j.finish()
    }

    /// Writes the event's fields (`event`, `time`, then its payload, in the contract's order) into `w`.
    package func writeFields<W: EventFieldWriter>(into j: inout W) {
        j.add("event", name)
        j.addTime("time", secondsSince1970: time.timeIntervalSince1970)
        switch kind {
        case .ready(let t): j.add(t, path: true)
        case .status(let t), .stop(let t): j.add(t, path: false)
        case .write(let w): j.add(w)
        case .evict(let e): j.add(e)
        case .trim(let t): j.add(t)
        case .overflow: break
        case .rescan(let r): j.add(r)
        case .lowDisk(let l): j.add(l)
        case .clear(let c): j.add(c)
        case .dropped(let count): j.add("count", count)
        case .error(let e): j.add(e)
        case .deferred(let d): j.add(d, status: false)
        }
    }
}

/// The fields of each event payload, in the contract's order.
extension EventFieldWriter {
    package mutating func add(_ t: DirectoryTotals, path: Bool) {
        add("dir", t.dir)
        if path { add("path", t.path) }
        add("total", t.total)
        add("files", t.files)
        add("quota", t.quota)
    }

    mutating func add(_ w: FileWritten) {
        add("dir", w.dir)
        add("file", w.file)
        add("size", w.size)
        add("total", w.total)
        add("files", w.files)
        add("quota", w.quota)
    }

    mutating func add(_ e: Eviction) {
        add("dir", e.dir)
        add("file", e.file)
        add("size", e.size)
        add("reason", e.reason.rawValue)
        if let files = e.files { add("files", files) }
        if let pointers = e.pointers { add("pointers", pointers) }
        if e.dryRun { add("dry_run", true) }
    }

    package mutating func add(_ t: TrimReport) {
        add("dir", t.dir)
        add("reason", t.reason.rawValue)
        add("removed", t.removed)
        add("freed", t.freed)
        add("total_before", t.totalBefore)
        add("total", t.total)
        add("quota", t.quota)
        add("target", t.target)
        if let n = t.targetFiles { add("target_files", n) }
        if let low = t.lowWatermark { add("low_watermark", low) }
        if let high = t.highWatermark { add("high_watermark", high) }
        add("duration_ms", t.durationMilliseconds)
        if let group = t.group { add("group", group) }
        if let deferred = t.deferredSeconds { add("deferred_s", deferred) }
        if let skipped = t.skipped { add("skipped", skipped.rawValue) }
        if t.shortBy > 0 { add("short_by", t.shortBy) }
        if let n = t.filesShortBy, n > 0 { add("files_short_by", n) }
        if let s = t.spared, !s.isEmpty { add(s) }
        if t.paced { add("paced", true) }
        if t.held { add("held", true) }
        if t.dryRun { add("dry_run", true) }
    }

    /// `"spared":{"protected":N,"in_use":N,"young":N,"vetoed":N}`.
    mutating func add(_ s: SparedFiles) {
        addObject("spared") { inner in
            inner.add("protected", s.protected)
            inner.add("in_use", s.inUse)
            inner.add("young", s.young)
            inner.add("vetoed", s.vetoed)
        }
    }

    mutating func add(_ r: RescanReport) {
        add("dir", r.dir)
        add("drift", r.drift)
        add("total", r.total)
        add("files", r.files)
    }

    mutating func add(_ l: LowDiskReport) {
        add("mount", l.mount)
        add("free", l.free)
        add("size", l.size)
        add("threshold", l.threshold)
        add("dirs", l.dirs)
        add("bytes_per_s", l.bytesPerSecond)
        add("seconds_to_full", l.secondsToFull)
    }

    package mutating func add(_ c: ClearProgress) {
        add("phase", c.phase.rawValue)
        add("progress", c.progress)
        add("dirs", c.dirs)
        if c.phase == .done {
            add("freed", c.freed)
            add("removed", c.removed)
        }
        if c.dryRun { add("dry_run", true) }
    }

    mutating func add(_ e: WardenIssue) {
        add("message", e.message)
        add("dir", e.dir)
        add("file", e.file)
        add("kind", e.kind)
    }
}
