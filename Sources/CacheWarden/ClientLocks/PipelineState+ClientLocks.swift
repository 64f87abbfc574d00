/// A trim takes its cache's client locks before it deletes anything in a root, and waits while the client holds
/// one: the root is skipped (nothing deleted there), one `deferred` line says why and who holds it, and the trim is
/// tried again with back-off on the policy's wake-up; past `client_lock_wait` one `error` line says so, and it
/// goes on waiting. A lock is never broken, never skipped.
extension PipelineState {
    /// Takes root `id`'s client locks before `goal` deletes there (the evictor, just before it trims the root);
    /// false: busy, and nothing is deleted there now (`clientLocks.busy` says why). Within a goal, once is enough.
    mutating func admitClientLocks(_ id: RootID, _ rt: RootRuntime, _ goal: EvictionGoal) -> Bool {
        guard let locks = rt.settings.clientLock, !locks.isEmpty, clientLocks.held[id] == nil else { return true }
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
        let findHolders = waiting.map { !$0.overdue && ClientLockTable.elapsed($0.since, now) >= Nanoseconds.span(seconds: settings.clientLockWait) } ?? true
        switch locks.tryTake(rootPath: rt.path, dir: rt.name, scope: .root, findHolders: findHolders) {
        case .success(let held):
            clientLocks.held[id] = held
            return true
        case .failure(let busy):
            clientLocks.busy[id] = (busy, true)
            return false
        }
    }

    /// `inner`, refusing every deletion once root `id`'s locks no longer stand, and, deleting file by file in a root
    /// of units, each file whose unit's lock is held (see `ClientLockGuardedDeleter`).
    func guardedDeleter(_ inner: any FileDeleter, _ id: RootID) -> any FileDeleter {
        guard let held = clientLocks.held[id], let rt = roots[id], let locks = rt.settings.clientLock else { return inner }
        var units: UnitClientLocks?
        if case .depth(let depth) = rt.settings.evictUnit, !locks.perUnit.isEmpty {
            units = UnitClientLocks(locks: locks, rootPath: rt.path, dir: rt.name, depth: depth, skipping: held.identities)
        }
        guard !held.isEmpty || units != nil else { return inner }
        return ClientLockGuardedDeleter(inner: inner, held: held, units: units)
    }

    /// The per-unit locks of `unit` (relative to root `id`), taken just before it is deleted (those of the unit
    /// before are released); false: busy, the unit stays.
    mutating func takeUnitClientLocks(_ id: RootID, _ rt: RootRuntime, unit: String) -> Bool {
        guard let locks = rt.settings.clientLock, !locks.perUnit.isEmpty else { return true }
        clientLocks.unitHeld?.release()
        clientLocks.unitHeld = nil
        let skipping = clientLocks.held[id]?.identities ?? []
        switch locks.tryTake(rootPath: rt.path, dir: rt.name, scope: .unit(unit), skipping: skipping, findHolders: false) {
        case .success(let held):
            clientLocks.unitHeld = held
            return true
        case .failure: return false
        }
    }
}
