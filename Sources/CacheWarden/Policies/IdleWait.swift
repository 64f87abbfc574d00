import CacheWardenLedger
import CacheWardenFilesystem

/// `trim_after_idle`: a trim takes nothing from a directory until it has had no activity for that long, unless its
/// total is above its `hard_quota` (200 % of the quota by default). One rule for every trim that takes from a
/// directory: its own quota trim, and its turns in a group's trim or a low-disk purge (where the group's hard cap
/// and a disk below its low watermark may override it: see `GroupPolicy`, `Evictor.free`).
enum IdleWait {
    /// When `rt` will have been idle for its `trim_after_idle` (uptime nanoseconds on the watcher's clock), if that
    /// is still to come; nil when a trim may take from it now.
    static func until(_ rt: RootRuntime, _ state: PipelineState) -> UInt64? {
        guard let idle = rt.settings.trimAfterIdle else { return nil }
        let quota = rt.settings.quota
        if quota > 0 && state.ledger.total(rt.id) > (rt.settings.hardQuota ?? .percent(200)).bytes(of: quota) {
            return nil
        }
        let ready = Nanoseconds.after(state.lastActivity[rt.id] ?? 0, seconds: idle)
        return state.clock.uptimeNanoseconds < ready ? ready : nil
    }

    /// Marks the members of a shared goal that wait for idle (`EvictionGoal.cannotGive`), and asks to be consulted
    /// again when the first of them may give.
    static func markWaiting(
        _ ids: [RootID], in goal: inout EvictionGoal, _ decision: inout PolicyDecision,
        _ state: PipelineState
    ) {
        for id in ids {
            guard let rt = state.roots[id], let ready = until(rt, state) else { continue }
            goal.cannotGive[id] = .trimAfterIdle
            decision.wake(at: ready)
        }
    }
}
