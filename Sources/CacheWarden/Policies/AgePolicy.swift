import CacheWardenLedger
import CacheWardenFilesystem

/// Files older than their directory's `max_age` (mPaaS's purgeable types) are expired: right after the initial
/// scan, then on a timer (a tenth of the shortest `max_age`, 1 s … 1 h, unless `expire_interval` says otherwise).
/// No rescans: the ledger knows every file's age. With `delete_rate`, a pass unlinks at most that many files and
/// the engine runs the next pass a second later, until a pass ends below its budget (nginx's cache manager paces
/// its deletions the same way).
struct AgePolicy: CleaningPolicy {
    let timerInterval: Int64?

    init?(_ settings: WardenSettings) {
        guard let shortest = settings.directories.compactMap(\.maxAge).min() else { return nil }
        timerInterval = settings.expireInterval ?? min(3600, max(1, shortest / 10))
    }

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool { dir.maxAge != nil }

    func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        guard trigger != .changes else { return PolicyDecision() }
        var decision = PolicyDecision()
        let now = state.clock.fileTimeNanoseconds
        for id in roots {
            guard let rt = state.roots[id], rt.lost == nil, let maxAge = rt.settings.maxAge else { continue }
            let cutoff = Nanoseconds.before(now, seconds: maxAge)
            guard let oldest = state.ledger.oldestAge(id), oldest < cutoff else { continue }
            decision.goals.append(
                EvictionGoal(reason: .age, roots: [id], target: .olderThan(cutoff), limit: rt.settings.deleteRate))
        }
        return decision
    }
}
