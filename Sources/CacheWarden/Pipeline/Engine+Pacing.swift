/// How close to its quota a root may be before the engine stops resting between batches (see `readingPace`).
let nearQuotaShare = 0.75
/// How close to its quota a root may be before the engine stops long rests (see `readingPace`).
let longRestShare = 0.5
/// What a long rest needs below a root's trim level, whatever its share: 64 MiB, what a writer at 871 MB/s (the
/// overshoot section's) writes in 77 ms, against a long rest's 40 ms.
let longRestHeadroom: Int64 = 64 << 20

/// Keeping a quota under a fast writer. A writer at tmpfs speed fills a tenth of a quota in a few milliseconds, so
/// the time from a crossing write to the first deletion is the overshoot. Far from every quota the backend may rest
/// after a batch while records keep coming (`ReadPacing`: 2 ms while they come fast, 40 ms while a steady stream
/// wakes it every few milliseconds), which keeps the watcher's CPU per file low. Whether a stream is steady is
/// judged by its wake-ups, not its bytes (a writer of large files at disk speed wakes the reader every few
/// milliseconds too), so a long rest is taken only while every root with a quota is under half its trim level and
/// `longRestHeadroom` below it (40 ms of a writer at 871 MB/s is 35 MB, 2 ms 1.7 MB); otherwise only the short rest
/// of a fast stream, and near the level (75 %) none (`BackendPace.keepReading`), so the crossing is read as soon as
/// it is queued, and the records queued during a trim are read as soon as it ends.
extension Engine {
    /// What the roots' totals allow: the most watchful of `readingPace(total:trimLevel:)` over the roots with a
    /// quota.
    func readingPace() -> BackendPace {
        var pace = BackendPace.rest
        for id in state.roots.order {
            guard let s = state.roots[id]?.settings, s.quota > 0 else { continue }
            pace = max(pace, Self.readingPace(total: state.ledger.total(id), trimLevel: s.trimAtBytes))
            if pace == .keepReading { break }
        }
        return pace
    }

    /// For one root: `keepReading` at `nearQuotaShare` of the level where its trim starts or above, `restBriefly`
    /// at `longRestShare` of it or within `longRestHeadroom` of it, `rest` otherwise.
    static func readingPace(total: Int64, trimLevel: Int64) -> BackendPace {
        let (total, level) = (Double(total), Double(trimLevel))
        if total >= level * nearQuotaShare { return .keepReading }
        if total >= level * longRestShare || level - total < Double(longRestHeadroom) { return .restBriefly }
        return .rest
    }
}
