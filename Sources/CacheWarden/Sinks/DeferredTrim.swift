/// A trim waiting for its client's lock: what the `deferred` line and `status` report.
public struct DeferredTrim: Sendable, Equatable {
    /// The trim's reason (`quota`, `age`, `group_quota`, `low_disk`, `max_files`, `manual`, `clear`).
    public var reason: TrimReason
    /// What keeps it waiting.
    public var busy: ClientLockBusy
    /// Seconds it has waited so far (0 on the `deferred` line).
    public var waitedSeconds: Double
    /// Seconds until the next try (nil where the command that asked retries: `trim`, `clear`).
    public var retrySeconds: Double?
    /// It has waited past `client_lock_wait` (an `error` line said so).
    public var overdue: Bool

    public init(
        reason: TrimReason, busy: ClientLockBusy, waitedSeconds: Double = 0, retrySeconds: Double? = nil,
        overdue: Bool = false
    ) {
        self.reason = reason
        self.busy = busy
        self.waitedSeconds = waitedSeconds
        self.retrySeconds = retrySeconds
        self.overdue = overdue
    }

    /// The registered directory.
    public var dir: String { busy.dir }
}

extension EventFieldWriter {
    /// A deferred trim's fields: the `deferred` line's (`status: false`), or the `deferred` object of a directory's
    /// status (`status: true`: with how long it has waited, and whether past `client_lock_wait`).
    package mutating func add(_ d: DeferredTrim, status: Bool) {
        if !status { add("dir", d.dir) }
        add("reason", d.reason.rawValue)
        add(d.busy)
        if status { add("waited_s", d.waitedSeconds) }
        if let retry = d.retrySeconds { add("retry_s", retry) }
        if status && d.overdue { add("overdue", true) }
    }
}

extension EventFieldWriter {
    /// What keeps a lock from being taken: `lock`, `why`, + `detail`, + the first holder's `pid` and `command`, +
    /// `holders` (how many, when more than one).
    package mutating func add(_ b: ClientLockBusy) {
        add("lock", b.lock)
        add("why", b.why.rawValue)
        if let detail = b.detail { add("detail", detail) }
        if let holder = b.holders.first {
            add("pid", Int(holder.pid))
            add("command", holder.command)
        }
        if b.holders.count > 1 { add("holders", b.holders.count) }
    }
}
