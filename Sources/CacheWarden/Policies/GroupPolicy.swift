/// Shared budgets (`group.<g>.quota`, `dir.<name>.group`): when the members' sum crosses the group's quota, the
/// group is trimmed to its `trim_to` (half by default), one file at a time from the member furthest above its fair
/// share — the group quota split by the members' `weight`s — or least under it once all are under (Android's
/// per-app cache quota; several tools' caches on one build disk). Each member's own quota still applies.
struct GroupPolicy: CleaningPolicy {
    private let groups: [GroupSettings]

    init?(_ settings: WardenSettings) {
        guard !settings.groups.isEmpty else { return nil }
        groups = settings.groups
    }

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool { dir.group != nil }

    var timerInterval: Int64? { nil }

    func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        var decision = PolicyDecision()
        let touched = Set(roots.compactMap { state.roots[$0]?.settings.group })
        for group in groups where touched.contains(group.name) {
            let members = state.roots.all.filter { $0.settings.group == group.name && $0.lost == nil }
            let sum = members.reduce(Int64(0)) { $0 + state.ledger.total($1.id) }
            guard sum > group.quota else { continue }
            let weights = members.reduce(0) { $0 + $1.settings.weight }
            var shares: [RootID: Int64] = [:]
            for m in members {
                // quota × weight / weights, without overflowing in between (a share is at most the quota).
                let product = group.quota.multipliedFullWidth(by: Int64(m.settings.weight))
                shares[m.id] = Int64(max(1, weights)).dividingFullWidth(product).quotient
            }
            decision.goals.append(EvictionGoal(reason: .groupQuota, roots: members.map(\.id),
                                               target: .groupTotal(group.trimTo.bytes(of: group.quota)),
                                               group: group.name, shares: shares))
        }
        return decision
    }
}
