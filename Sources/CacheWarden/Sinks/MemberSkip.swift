/// Why a member of a shared trim — a group over its budget, a directory of a filesystem low on space — gave
/// nothing when its turn came (`"skipped"` on its `trim` line). The others then gave its share.
public enum MemberSkip: String, Sendable, Equatable, CaseIterable {
    /// It waits for its `trim_after_idle` (the directory was active too recently), and neither the group's hard
    /// cap (200 % of the group quota) nor its own `hard_quota`, nor a low-disk emergency overrode the wait.
    case trimAfterIdle = "trim_after_idle"
    /// Everything it had left was younger than `min_age`.
    case minAge = "min_age"
    /// Everything it had left was spared otherwise — protected, in use, vetoed, or in a unit holding such a file
    /// (`spared` on the line counts them).
    case spared
    /// It had nothing left to take.
    case nothingLeft = "nothing_left"

    /// A wait, not a shortfall: the member gives once idle, so its line has no `short_by`. (A member whose client
    /// holds its lock has no `trim` line at all: its `deferred` line says why.)
    public var isWait: Bool { self == .trimAfterIdle }
}
