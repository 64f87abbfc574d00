import CacheWardenLedger
import CacheWardenFilesystem

/// A trim takes its cache's client locks before it deletes anything in a root, and waits while the client holds
/// one: the root is skipped (nothing deleted there), one `deferred` line says why and who holds it, and the trim is
/// tried again with back-off on the policy's wake-up; past `client_lock_wait` one `error` line says so, and it
/// goes on waiting. A lock is never broken, never skipped.
extension PipelineState {
    /// Takes root `id`'s client locks before `goal` deletes there (the evictor, just before it trims the root);
    /// false: busy, and nothing is deleted there now (`clientLocks.busy` says why). Within a goal, once is enough:
    /// locks taken stay taken, and a root found busy stays busy until the goal ends (no second take, no second look
    /// in `/proc`).
    mutating func admitClientLocks(_ id: RootID, _ rt: RootRuntime, _ goal: EvictionGoal) -> Bool {
        guard let locks = rt.settings.clientLock, !locks.isEmpty, clientLocks.held[id] == nil else { return true }
        if clientLocks.busy[id] != nil { return false }
        let now = clock.uptimeNanoseconds
        let waiting = clientLocks.waiting[ClientLockTable.Key(root: id, reason: goal.reason)].flatMap {
            $0.dir == rt.name && ClientLockTable.isCurrent($0, now: now) ? $0 : nil
        }
        // Back-off: a policy's wait is tried again at its time (its wake-up), not at every change meanwhile.
        if let waiting, waiting.policy != nil, now < waiting.next {
            clientLocks.busy[id] = (waiting.busy, false)
            return false
        }
        // Who holds it is looked up in /proc when a wait begins and when it goes past client_lock_wait.
        let findHolders =
            waiting.map {
                !$0.overdue
                    && ClientLockTable.elapsed($0.since, now) >= Nanoseconds.span(seconds: settings.clientLockWait)
            } ?? true
        // A root's own locks name at most as many files as the units' budget, but are not counted in it: they are
        // held for the whole goal (a group's or a low-disk purge's members' at once), beside the units' budget.
        switch locks.tryTake(
            rootPath: rt.path, dir: rt.name, scope: .root, registry: clientLocks.files, findHolders: findHolders,
            maxFiles: clientLocks.files.unitBudget.limit)
        {
        case .success(let held):
            clientLocks.held[id] = held
            return true
        case .failure(let busy):
            clientLocks.busy[id] = (busy, true)
            return false
        }
    }

    /// `inner`, refusing every deletion once root `id`'s locks no longer stand, and, in a root of units with
    /// per-unit locks, each file whose unit's lock is held (see `ClientLockGuardedDeleter`). Every deleter of the
    /// goal for that root shares one unit lock set (`clientLocks.units`).
    mutating func guardedDeleter(_ inner: any FileDeleter, _ id: RootID) -> any FileDeleter {
        guard let held = clientLocks.held[id], let rt = roots[id], let locks = rt.settings.clientLock else {
            return inner
        }
        var units: UnitClientLocks?
        if case .depth(let depth) = rt.settings.evictUnit, !locks.perUnit.isEmpty {
            units =
                clientLocks.units[id]
                ?? UnitClientLocks(
                    locks: locks, rootPath: rt.path, dir: rt.name, depth: depth, registry: clientLocks.files)
            clientLocks.units[id] = units
        }
        guard !held.isEmpty || units != nil else { return inner }
        return ClientLockGuardedDeleter(inner: inner, held: held, units: units)
    }

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
