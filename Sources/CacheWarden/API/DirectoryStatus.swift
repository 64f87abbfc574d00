import FoundationEssentials

/// A size report of one directory (what `cachewarden status` shows).
public struct DirectoryStatus: Sendable, Equatable {
    /// Running totals.
    public var totals: DirectoryTotals
    /// Age key of the oldest counted file, if any.
    public var oldest: Date?
    /// Bytes in protected files (counted, never deleted).
    public var protectedBytes: Int64
    /// Free bytes on the directory's filesystem (`nil` when `statvfs` failed).
    public var filesystemFree: Int64?
    /// The shared budget the directory belongs to, if any.
    public var group: String? = nil
    /// The total a quota trim aims for (`trim_to` of the quota; nil without a quota).
    public var trimTarget: Int64? = nil
    /// Directories of the tree followed by an inotify watch (nil in a one-shot report, which watches nothing, and
    /// for a root not served by inotify).
    public var watches: Int? = nil
    /// The backend serving the directory (`inotify`, `fanotify` or `poll`; nil in a one-shot report).
    public var backend: String? = nil
    /// What the last polling pass over a polled directory cost (nil before the first pass).
    public var pollPass: PollPassCost? = nil
    /// Directories of an inotify root past the inotify watch limit, polled every `poll_interval` instead (nil in
    /// a one-shot report and for a root not served by inotify).
    public var polledDirectories: Int? = nil
    /// Directories of an inotify root past the inotify watch limit, followed by fanotify instead (nil likewise).
    public var fanotifyDirectories: Int? = nil
    /// The total above which a quota trim starts (`trim_at`, the quota by default; nil without a quota).
    public var trimAt: Int64? = nil
    /// With `trim_after_idle`: the total above which a trim runs at once (`hard_quota`; nil otherwise).
    public var hardQuota: Int64? = nil
    /// The directory's `max_files` (nil: none).
    public var maxFiles: Int? = nil
    /// The free-space watermarks of the directory's filesystem, in bytes (nil without `low_disk_free`): a low-disk
    /// purge starts below the low one (the strictest `low_disk_free` of the directories on that filesystem) and goes
    /// on to the high one (`low_disk_target`, at least a tenth above the low one).
    public var lowWatermark: Int64? = nil
    public var highWatermark: Int64? = nil
    /// Why the directory is not followed now — it is gone, or came back in a form that is not taken back (another
    /// mount, a symlink, a refused folder) — or nil while it is. Its totals are then 0.
    public var lost: String? = nil
    /// The client locks a trim takes here (`client_lock`; nil: none).
    public var clientLock: ClientLocks? = nil
    /// The oldest trim waiting for the client's lock (nil: none waits).
    public var deferred: DeferredTrim? = nil

    public init(
        totals: DirectoryTotals, oldest: Date?, protectedBytes: Int64, filesystemFree: Int64?,
        group: String? = nil, trimTarget: Int64? = nil, watches: Int? = nil, backend: String? = nil,
        pollPass: PollPassCost? = nil
    ) {
        self.totals = totals
        self.oldest = oldest
        self.protectedBytes = protectedBytes
        self.filesystemFree = filesystemFree
        self.group = group
        self.trimTarget = trimTarget
        self.watches = watches
        self.backend = backend
        self.pollPass = pollPass
    }

    /// Use of the quota in percent (`nil` without a quota).
    public var usePercent: Double? {
        totals.quota > 0 ? Double(totals.total) * 100 / Double(totals.quota) : nil
    }

    /// The report as one JSON object on one line (`cachewarden status --json`), built by the same writer as the
    /// event lines. `now` is the time ages are measured from.
    public func jsonLine(now: Date = Date()) -> String {
        var j = JSONLineBuilder()
        j.add(self, now: now)
        return String(decoding: j.finish(), as: UTF8.self)
    }
}

extension JSONLineBuilder {
    /// A directory's status fields (also the objects of the control socket's `status` reply).
    package mutating func add(_ s: DirectoryStatus, now: Date) {
        add("dir", s.totals.dir)
        add("path", s.totals.path)
        add("total", s.totals.total)
        add("files", s.totals.files)
        add("quota", s.totals.quota)
        add("protected", s.protectedBytes)
        add("group", s.group)
        add("use_percent", s.usePercent)
        if let target = s.trimTarget { add("trim_target", target) }
        if let trimAt = s.trimAt { add("trim_at", trimAt) }
        if let hard = s.hardQuota { add("hard_quota", hard) }
        if let maxFiles = s.maxFiles { add("max_files", maxFiles) }
        if let low = s.lowWatermark { add("low_watermark", low) }
        if let high = s.highWatermark { add("high_watermark", high) }
        if let watches = s.watches { add("watches", watches) }
        if let polled = s.polledDirectories { add("polled_dirs", polled) }
        if let fanotify = s.fanotifyDirectories { add("fanotify_dirs", fanotify) }
        add("backend", s.backend)
        if let lost = s.lost { add("lost", lost) }
        if let locks = s.clientLock, !locks.isEmpty { add("client_lock", locks.configText) }
        if let deferred = s.deferred { addObject("deferred") { $0.add(deferred, status: true) } }
        if let pass = s.pollPass {
            add("poll_pass_ms", (pass.seconds * 1e6).rounded() / 1e3)
            add("poll_dirs_read", pass.directoriesRead)
            add("poll_dirs_checked", pass.directoriesChecked)
        }
        if let oldest = s.oldest { add("oldest_age_s", Int64(now.timeIntervalSince(oldest))) }
        if let free = s.filesystemFree { add("fs_free", free) }
    }
}
