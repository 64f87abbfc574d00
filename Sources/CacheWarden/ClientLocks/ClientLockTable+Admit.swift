import CacheWardenLedger
import CacheWardenFilesystem

/// Taking a root's client locks for a goal, and the deleter that respects them: what a trim does with the table
/// before it deletes anything in a root (`Evictor.makeRun`), and a request before it runs
/// (`Engine.takeRequestClientLocks`).
extension ClientLockTable {
    /// Takes root `id`'s client locks before `goal` deletes there (the evictor, just before it trims the root);
    /// false: busy, and nothing is deleted there now (`busy` says why). Within a goal, once is enough: locks taken
    /// stay taken, and a root found busy stays busy until the goal ends (no second take, no second look in
    /// `/proc`). `now` is the watcher's uptime, `lockWait` the `client_lock_wait` setting (seconds).
    mutating func admit(_ id: RootID, _ rt: RootRuntime, _ goal: EvictionGoal, now: UInt64, lockWait: Int64) -> Bool {
        guard let locks = rt.settings.clientLock, !locks.isEmpty, held[id] == nil else { return true }
        if busy[id] != nil { return false }
        let wait = waiting[ClientLockTable.Key(root: id, reason: goal.reason)].flatMap {
            $0.dir == rt.name && ClientLockTable.isCurrent($0, now: now) ? $0 : nil
        }
        // Back-off: a policy's wait is tried again at its time (its wake-up), not at every change meanwhile.
        if let wait, wait.policy != nil, now < wait.next {
            busy[id] = (wait.busy, false)
            return false
        }
        // Who holds it is looked up in /proc when a wait begins and when it goes past client_lock_wait.
        let findHolders =
            wait.map {
                !$0.overdue
                    && ClientLockTable.elapsed($0.since, now) >= Nanoseconds.span(seconds: lockWait)
            } ?? true
        // A root's own locks name at most as many files as the units' budget, but are not counted in it: they are
        // held for the whole goal (a group's or a low-disk purge's members' at once), beside the units' budget.
        switch locks.tryTake(
            rootPath: rt.path, dir: rt.name, scope: .root, registry: files, findHolders: findHolders,
            maxFiles: files.unitBudget.limit)
        {
        case .success(let taken):
            held[id] = taken
            return true
        case .failure(let found):
            busy[id] = (found, true)
            return false
        }
    }

    /// `inner`, refusing every deletion once root `id`'s locks no longer stand, and, in a root of units with
    /// per-unit locks, each file whose unit's lock is held (see `ClientLockGuardedDeleter`). Every deleter of the
    /// goal for that root shares one unit lock set (`units`).
    mutating func guardedDeleter(_ inner: any FileDeleter, _ id: RootID, _ rt: RootRuntime) -> any FileDeleter {
        guard let rootLocks = held[id], let locks = rt.settings.clientLock else { return inner }
        var unitLocks: UnitClientLocks?
        if case .depth(let depth) = rt.settings.evictUnit, !locks.perUnit.isEmpty {
            unitLocks =
                units[id]
                ?? UnitClientLocks(locks: locks, rootPath: rt.path, dir: rt.name, depth: depth, registry: files)
            units[id] = unitLocks
        }
        guard !rootLocks.isEmpty || unitLocks != nil else { return inner }
        return ClientLockGuardedDeleter(inner: inner, held: rootLocks, units: unitLocks)
    }
}
