import CacheWardenLedger

/// A directory above its high watermark (`trim_at`, the quota by default) is trimmed, oldest first, down to
/// `trim_to` (half the quota by default: SDWebImage's and mPaaS's rule). With `trim_after_idle` the trim waits
/// until the directory has had no activity for that long — a build finishes, then its cache is trimmed — unless
/// the total crosses `hard_quota` (200 % of the quota by default), which trims at once.
struct QuotaPolicy: CleaningPolicy {
    /// Since when each deferred trim has waited (uptime nanoseconds).
    private var deferredSince: [RootID: UInt64] = [:]

    init?(_ settings: WardenSettings) {}

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool { dir.quota > 0 }

    var timerInterval: Int64? { nil }

    mutating func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        var decision = PolicyDecision()
        let now = state.clock.uptimeNanoseconds
        // A deferred trim's wake-up concerns its own roots, whatever the trigger.
        for id in Set(roots).union(trigger == .timer ? Set(deferredSince.keys) : []).sorted() {
            guard let rt = state.roots[id], rt.lost == nil, rt.settings.quota > 0 else {
                deferredSince[id] = nil; continue
            }
            let total = state.ledger.total(id)
            guard total > rt.settings.trimAtBytes else { deferredSince[id] = nil; continue }
            if let ready = IdleWait.until(rt, state) {
                if deferredSince[id] == nil { deferredSince[id] = now }
                decision.wake(at: ready)
                continue
            }
            let waited = deferredSince.removeValue(forKey: id).map { Double(now - $0) / 1e9 }
            decision.goals.append(
                EvictionGoal(
                    reason: .quota, roots: [id], target: .total(rt.settings.trimToBytes),
                    deferredSeconds: waited))
        }
        return decision
    }
}
