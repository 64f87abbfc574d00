import CacheWardenLedger
import CacheWardenFilesystem

/// The trims waiting for a client's lock: begun with one `deferred` line, retried with back-off, reported once
/// past `client_lock_wait` (an `error` line of kind `client_lock_wait`), and forgotten once the trim runs, or its
/// policy no longer asks for it.
extension PipelineState {
    /// Files root `id`'s trim for `reason` as waiting for `busy`: a new wait with its `deferred` line, or one more
    /// try of a known one (its back-off grows); past `client_lock_wait`, the `error` line, once.
    @discardableResult
    mutating func noteWaiting(
        _ id: RootID, _ reason: TrimReason, policy: Int?, _ busy: ClientLockBusy, tried: Bool,
        now: UInt64
    ) -> ClientLockTable.Waiting? {
        guard let rt = roots[id] else { return nil }
        let key = ClientLockTable.Key(root: id, reason: reason)
        guard var w = clientLocks.waiting[key], w.dir == rt.name, ClientLockTable.isCurrent(w, now: now) else {
            let w = ClientLockTable.Waiting(
                dir: rt.name, reason: reason, policy: policy, since: now,
                next: Nanoseconds.after(now, seconds: 1), lastAsked: now, busy: busy)
            clientLocks.waiting[key] = w
            events.emit(.deferred(DeferredTrim(reason: reason, busy: busy, retrySeconds: policy == nil ? nil : 1)))
            return w
        }
        if tried {
            w.attempts += 1
            w.next = Nanoseconds.after(now, seconds: Int64(ClientLockTable.backoff(w.attempts)))
            // A try that did not look for holders keeps those found before, if it is still the same lock held.
            if !(busy.why == .held && busy.holders.isEmpty && w.busy.why == .held && w.busy.lock == busy.lock) {
                w.busy = busy
            }
        }
        w.lastAsked = now
        w.policy = policy ?? w.policy // policies are numbered anew on reload
        let limit = Nanoseconds.span(seconds: settings.clientLockWait)
        if !w.overdue && ClientLockTable.elapsed(w.since, now) >= limit {
            w.overdue = true
            let waited = ClientLockTable.elapsed(w.since, now) / 1_000_000_000
            events.error(
                "the \(reason.rawValue) trim has waited \(waited) s (client_lock_wait = \(settings.clientLockWait) s): \(w.busy); it goes on waiting, a client's lock is never broken",
                dir: rt.name, kind: "client_lock_wait")
        }
        clientLocks.waiting[key] = w
        return w
    }

    /// After policy `only` (or every policy) was consulted on its timer about `roots`: the waits of the roots
    /// it no longer wants trimmed are over (the client freed the space itself, the idle wait began again), and
    /// the waits of roots no longer registered, or that no longer take a client's lock (a reload), go.
    mutating func forgetClientLockWaits(
        _ trigger: PolicyTrigger, roots consulted: [RootID], only: Int?, goals: [EvictionGoal]
    ) {
        guard !clientLocks.waiting.isEmpty else { return }
        let asked = Set(consulted)
        for (key, w) in clientLocks.waiting {
            if roots[key.root]?.name != w.dir || roots[key.root]?.settings.clientLock?.isEmpty != false {
                clientLocks.waiting[key] = nil
                continue
            }
            guard trigger == .timer, let p = w.policy, only == nil || only == p, asked.contains(key.root) else {
                continue
            }
            if !goals.contains(where: { $0.policy == p && $0.roots.contains(key.root) }) {
                clientLocks.waiting[key] = nil
            }
        }
    }

    /// The oldest current wait of root `id`, as `status` shows it.
    func clientLockWait(of id: RootID) -> DeferredTrim? {
        let now = clock.uptimeNanoseconds
        let mine = clientLocks.waiting.filter { key, w in
            key.root == id && w.dir == roots[id]?.name && ClientLockTable.isCurrent(w, now: now)
        }.values
        guard let w = mine.min(by: { $0.since < $1.since }) else { return nil }
        return DeferredTrim(
            reason: w.reason, busy: w.busy, waitedSeconds: Double(ClientLockTable.elapsed(w.since, now)) / 1e9,
            retrySeconds: w.policy == nil ? nil : Double(ClientLockTable.elapsed(now, w.next)) / 1e9,
            overdue: w.overdue)
    }
}
