import CacheWardenLedger

/// When roots suspected of an unseen change (`LedgerUpdater.suspects`) are re-statted: at once the first time,
/// then at most once per `minimumInterval` per root, so a workload that keeps linking and unlinking names costs
/// one pass over the root's files per interval, not one per name.
struct AuditSchedule {
    static let minimumInterval: UInt64 = 10_000_000_000
    /// When each root was last audited.
    private(set) var last: [RootID: UInt64] = [:]
    private(set) var pending = Set<RootID>()
    var timer: ClockTimer?

    mutating func request(_ roots: Set<RootID>) { pending.formUnion(roots) }

    /// The pending roots that may be audited now (they leave `pending`), and when the next one may be.
    mutating func due(now: UInt64) -> (roots: [RootID], next: UInt64?) {
        var roots: [RootID] = []
        var next: UInt64?
        for id in pending.sorted() {
            let earliest = (last[id] ?? 0) &+ Self.minimumInterval
            if last[id] == nil || now >= earliest {
                roots.append(id)
                last[id] = now
                pending.remove(id)
            } else {
                next = min(next ?? earliest, earliest)
            }
        }
        return (roots, next)
    }

    mutating func cancel() {
        timer?.cancel()
        timer = nil
        pending.removeAll()
    }
}
