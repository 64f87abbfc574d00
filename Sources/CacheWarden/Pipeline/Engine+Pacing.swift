/// How close to its quota a root may be before the engine stops resting between batches (see `readingPace`).
let nearQuotaShare = 0.75
/// How close to its quota a root may be before the engine stops long rests (see `readingPace`).
let longRestShare = 0.5

/// Keeping a quota under a fast writer. A writer at tmpfs speed fills a tenth of a quota in a few
/// milliseconds, so the time from a crossing write to the first deletion is the overshoot. Far from every quota
/// the backend may rest after a batch while records keep coming (`ReadPacing`: 2 ms while they come fast, 20 ms
/// while a steady stream wakes it every few milliseconds), which keeps the watcher's CPU per file low; once a root
/// is at half its trim level only the short rest is taken (20 ms of a writer at 871 MB/s is 17 MB, 2 ms 1.7 MB),
/// and near it none (`BackendPace.keepReading`), so the crossing is read as soon as it is queued, and the records
/// queued during a trim are read as soon as it ends.
extension Engine {
    /// What the roots' totals allow: `keepReading` once any root with a quota is at `nearQuotaShare` of the level
    /// where its trim starts, `restBriefly` at `longRestShare` of it, `rest` otherwise.
    func readingPace() -> BackendPace {
        var pace = BackendPace.rest
        for id in state.roots.order {
            guard let s = state.roots[id]?.settings, s.quota > 0 else { continue }
            let total = Double(state.ledger.total(id))
            let level = Double(s.trimAtBytes)
            if total >= level * nearQuotaShare { return .keepReading }
            if total >= level * longRestShare { pace = .restBriefly }
        }
        return pace
    }
}
