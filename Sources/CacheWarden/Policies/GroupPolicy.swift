import CacheWardenLedger

/// Shared budgets (`group.<g>.quota`, `dir.<name>.group`): when the members' sum crosses the group's quota, the
/// group is trimmed to its `trim_to` (half by default), one victim at a time from the member furthest above its
/// fair share — the group quota split by the members' `weight`s — or least under it once all are under (Android's
/// per-app cache quota; several tools' caches on one build disk). Each member's own quota still applies, and so do
/// its rules: a victim is a whole unit with `evict_unit`, never a protected or too young file (`TrimRun`).
///
/// A member with `trim_after_idle` that has been active too recently gives nothing (the others give its share, and
/// may go below their own) — unless the group is above its hard cap, 200 % of its quota (as `hard_quota` for one
/// directory), or the member above its own `hard_quota`: then it gives at once. While members wait and the others
/// have nothing new to give, the group is not trimmed again; it is when the first waiting member may give
/// (`deferred_s` on its lines says how long the group waited).
struct GroupPolicy: CleaningPolicy {
    /// A group whose trim left members waiting for idle.
    private struct Waiting {
        /// Uptime nanoseconds: when its first trim with waiting members ran.
        var since: UInt64
        var members: Set<RootID>
        /// What the other members held after that trim (nil until its outcome is known).
        var othersLeft: Int64?
    }

    private let groups: [GroupSettings]
    private var waiting: [String: Waiting] = [:]

    init?(_ settings: WardenSettings) {
        guard !settings.groups.isEmpty else { return nil }
        groups = settings.groups
    }

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool { dir.group != nil }

    var timerInterval: Int64? { nil }

    /// Above this sum no member waits for idle: 200 % of the group quota.
    static func hardCap(_ quota: Int64) -> Int64 { SizeLimit.percent(200).bytes(of: quota) }

    mutating func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        var decision = PolicyDecision()
        let touched = Set(roots.compactMap { state.roots[$0]?.settings.group })
        for group in groups where touched.contains(group.name) {
            let members = state.roots.all.filter { $0.settings.group == group.name && $0.lost == nil }
            let sum = members.reduce(Int64(0)) { $0 + state.ledger.total($1.id) }
            guard sum > group.quota else { waiting[group.name] = nil; continue }
            var goal = EvictionGoal(
                reason: .groupQuota, roots: members.map(\.id),
                target: .groupTotal(group.trimTo.bytes(of: group.quota)),
                group: group.name, shares: Self.shares(members, of: group.quota))
            if sum <= Self.hardCap(group.quota) { IdleWait.markWaiting(goal.roots, in: &goal, &decision, state) }
            guard wantsTrim(&goal, members, now: state.clock.uptimeNanoseconds, state) else { continue }
            decision.goals.append(goal)
        }
        return decision
    }

    /// Each member's fair share: quota × weight / weights, without overflowing in between (a share is at most the
    /// quota).
    private static func shares(_ members: [RootRuntime], of quota: Int64) -> [RootID: Int64] {
        let weights = members.reduce(0) { $0 + $1.settings.weight }
        var shares: [RootID: Int64] = [:]
        for m in members {
            let product = quota.multipliedFullWidth(by: Int64(m.settings.weight))
            shares[m.id] = Int64(max(1, weights)).dividingFullWidth(product).quotient
        }
        return shares
    }

    /// Whether the group is trimmed now, given who waits for idle: not when the same members still wait and the
    /// others hold no more than they did after the last trim (it would find nothing new). A trim after a wait says
    /// how long the group waited.
    private mutating func wantsTrim(
        _ goal: inout EvictionGoal, _ members: [RootRuntime], now: UInt64, _ state: PipelineState
    ) -> Bool {
        let name = goal.group ?? ""
        let waiters = Set(goal.cannotGive.keys)
        guard !waiters.isEmpty else {
            if let w = waiting.removeValue(forKey: name) { goal.deferredSeconds = Double(now - w.since) / 1e9 }
            return true
        }
        let others = members.reduce(Int64(0)) { $0 + (waiters.contains($1.id) ? 0 : state.ledger.total($1.id)) }
        var w = waiting[name] ?? Waiting(since: now, members: waiters)
        if w.members == waiters, let left = w.othersLeft, others <= left { return false }
        w.members = waiters
        w.othersLeft = nil
        waiting[name] = w
        return true
    }

    /// After a trim with waiting members: what the others held once it was done.
    mutating func outcome(_ goal: EvictionGoal, _ reports: [TrimReport]) {
        guard let name = goal.group, !goal.cannotGive.isEmpty, waiting[name] != nil else { return }
        waiting[name]?.othersLeft = reports.reduce(0) { $0 + ($1.skipped == .trimAfterIdle ? 0 : $1.total) }
    }
}
