/// How close to its quota a root may be before the engine stops resting between batches (see `nearQuota`).
let nearQuotaShare = 0.75

/// Keeping a quota under a fast writer. A writer at tmpfs speed fills a tenth of a quota in a few
/// milliseconds, so the time from a crossing write to the first deletion is the overshoot. Far from every quota
/// the backend may rest 2 ms after a batch while records come fast (`ReadPacing`), which keeps the watcher's CPU
/// per file low (records arrive in batches of hundreds); while a root is near its quota it does not rest
/// (`BackendPace.keepReading`), so the crossing is
/// read as soon as it is queued, and the records queued during a trim are read as soon as it ends.
extension Engine {
    /// Any root with a quota is at `nearQuotaShare` of the level where its trim starts, or past it.
    func nearQuota() -> Bool {
        state.roots.order.contains { id in
            guard let s = state.roots[id]?.settings, s.quota > 0 else { return false }
            return Double(state.ledger.total(id)) >= Double(s.trimAtBytes) * nearQuotaShare
        }
    }
}
