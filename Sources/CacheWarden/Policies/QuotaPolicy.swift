/// A directory over its quota is trimmed, oldest first, to half of it (SDWebImage's and mPaaS's rule).
struct QuotaPolicy: CleaningPolicy {
    init?(_ settings: WardenSettings) {}

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool { dir.quota > 0 }

    var timerInterval: Int64? { nil }

    func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        var decision = PolicyDecision()
        for id in roots {
            guard let rt = state.roots[id], !rt.lost, rt.settings.quota > 0, state.ledger.total(id) > rt.settings.quota else { continue }
            decision.goals.append(EvictionGoal(reason: .quota, roots: [id], target: .total(rt.settings.quota / 2)))
        }
        return decision
    }
}
