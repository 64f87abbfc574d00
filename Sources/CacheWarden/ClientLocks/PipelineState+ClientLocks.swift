import CacheWardenLedger

/// A trim takes its cache's client locks before it deletes anything in a root, and waits while the client holds
/// one: the root is skipped (nothing deleted there), one `deferred` line says why and who holds it, and the trim is
/// tried again with back-off on the policy's wake-up; past `client_lock_wait` one `error` line says so, and it
/// goes on waiting. A lock is never broken, never skipped.
extension PipelineState {
    /// Ends a hold on client locks, a goal's or a request's (`policy` nil): releases them; files each root that
    /// found a lock busy, or lost one during the trim, as waiting for `reason`; forgets the waits of the roots it
    /// trimmed. Returns the first lock lost (the trim stopped there) and, for a policy's goal, when its waits want
    /// it to try again (uptime nanoseconds; nil: no root waits).
    mutating func settleClientLocks(_ reason: TrimReason, policy: Int?) -> (lost: ClientLockBusy?, wakeUp: UInt64?) {
        let now = clock.uptimeNanoseconds
        var lost: ClientLockBusy?
        sayUnitProblems()
        for (id, held) in clientLocks.held.sorted(by: { $0.key < $1.key }) {
            if let report = held.lostReport(dir: roots[id]?.name ?? "") {
                clientLocks.busy[id] = (report, true)
                lost = lost ?? report
            } else if clientLocks.busy[id] == nil {
                clientLocks.waiting[ClientLockTable.Key(root: id, reason: reason)] = nil
            }
        }
        clientLocks.releaseAll()
        var wakeUp: UInt64?
        for (id, found) in clientLocks.busy.sorted(by: { $0.key < $1.key }) {
            guard let w = noteWaiting(id, reason, policy: policy, found.busy, tried: found.tried, now: now),
                policy != nil
            else { continue }
            wakeUp = min(wakeUp ?? .max, w.next)
        }
        clientLocks.busy.removeAll()
        return (lost, wakeUp)
    }

    /// The kind of a unit's problem, from its detail without its numbers: too many lock files, no room beside the
    /// unit being deleted, or the lock file itself.
    static func problemKind(_ detail: String?) -> String {
        String((detail ?? "").unicodeScalars.filter { !("0"..."9").contains($0) })
    }

    /// The units whose locks could not be taken at all in this goal: one `error` line each (kind `client_lock`),
    /// once per directory, lock and reason while the engine runs. Not a wait: a unit of more lock files than the
    /// descriptors allowed stays so until the limit is raised.
    private mutating func sayUnitProblems() {
        for (id, units) in clientLocks.units.sorted(by: { $0.key < $1.key }) {
            for (unit, busy) in units.takeProblems() {
                // The lock and the kind of reason, not its detail: a count of files in it would make a new line each
                // time.
                let key = "\(busy.dir)\u{0}\(busy.lock)\u{0}\(busy.why)\u{0}\(Self.problemKind(busy.detail))"
                if clientLocks.said.count >= 4096 { clientLocks.said.removeAll() }
                guard roots[id] != nil, clientLocks.said.insert(key).inserted else { continue }
                events.error(
                    "\(busy); the unit stays, not counted as in use", dir: busy.dir, file: PathBytes.display(unit),
                    kind: "client_lock")
            }
        }
    }
}
