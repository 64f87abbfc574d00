import CacheWardenLedger

/// The client locks of a request (`trim`, `clear`): taken for every root it names before anything is deleted, all
/// or none. When one is busy the request is refused with who holds it (`WardenError.clientLockBusy`) and nothing is
/// deleted: the daemon never waits on a lock, the command that asked does, retrying.
extension Engine {
    /// Takes the client locks of `ids` for a request for `reason`; busy: throws, having noted the wait (its
    /// `deferred` line when it begins, with `announce`). A dry run takes none.
    func takeRequestClientLocks(_ ids: [RootID], _ reason: TrimReason, dryRun: Bool = false, announce: Bool = true)
        throws(WardenError)
    {
        guard let evictor, !evictor.dryRun, !dryRun else { return }
        for id in ids {
            guard let rt = state.roots[id], rt.lost == nil else { continue }
            let goal = EvictionGoal(reason: reason, roots: [id], target: reason == .clear ? .everything : .total(0))
            let now = state.clock.uptimeNanoseconds
            if state.clientLocks.admit(id, rt, goal, now: now, lockWait: state.settings.clientLockWait) { continue }
            let busy =
                state.clientLocks.busy.removeValue(forKey: id)?.busy
                ?? ClientLockBusy(dir: rt.name, lock: "?", why: .held)
            state.clientLocks.busy.removeAll()
            state.clientLocks.releaseAll()
            guard announce,
                let w = state.noteWaiting(
                    id, reason, policy: nil, busy, tried: true, now: state.clock.uptimeNanoseconds)
            else { throw .clientLockBusy(busy) }
            throw .clientLockBusy(w.busy) // with the holders found when the wait began
        }
    }
}
