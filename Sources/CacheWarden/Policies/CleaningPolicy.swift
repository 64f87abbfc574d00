import CacheWardenLedger

/// When the pipeline consults the policies.
enum PolicyTrigger: Equatable, Sendable {
    /// Right after a root's initial scan (and when it comes back after being lost).
    case startup
    /// After a batch of changes touched these roots.
    case changes
    /// The policy's own timer fired, or the wake-up it asked for.
    case timer
    /// New settings were applied.
    case reload
}

/// What a policy wants done: bring some roots to a target, oldest files first.
struct EvictionGoal: Equatable {
    enum Target: Equatable {
        /// The root's total at or below this many bytes.
        case total(Int64)
        /// At most this many files in the root.
        case files(Int)
        /// Free this many bytes, taking the roots in the goal's order.
        case free(Int64)
        /// No file with an age key older than this (nanoseconds since 1970).
        case olderThan(Int64)
        /// Every file (a clear).
        case everything
        /// The roots' sum at or below this many bytes, each step taken from the member furthest above its
        /// share (`shares`).
        case groupTotal(Int64)
    }
    var reason: TrimReason
    var roots: [RootID]
    var target: Target
    /// At most this many evictions in this pass (`delete_rate`); nil: no limit.
    var limit: Int? = nil
    /// Seconds the goal waited for the directory to be idle (for the trim line).
    var deferredSeconds: Double? = nil
    /// For group goals: the group's name and each member's fair share in bytes.
    var group: String? = nil
    var shares: [RootID: Int64] = [:]
    /// Set by `PolicySet`: which policy asked (for its outcome and its next paced pass).
    var policy = 0
    /// The policy's own note on the goal (the low-disk policy: the filesystem's device).
    var tag: UInt64 = 0
    /// For low-disk goals: the filesystem's watermarks (for the trim line).
    var watermarks: FreeSpaceWatermarks? = nil
    /// For shared goals (a group's, a low-disk purge's): the members that cannot give now, and why. Each is
    /// skipped when its turn comes (the others give its share) and its `trim` line says why. The policies set
    /// `.trimAfterIdle`. (A member whose client holds its lock is found so when its run is made: it has no run,
    /// and its `deferred` line says why — see `MemberTurns`.)
    var cannotGive: [RootID: MemberSkip] = [:]
}

/// A policy's decision: goals for the evictor, facts it observed on the way (a `low_disk` report), and when it
/// wants to be consulted again (a deferred trim, the next paced pass).
struct PolicyDecision {
    var goals: [EvictionGoal] = []
    var events: [WardenEvent.Kind] = []
    /// Uptime nanoseconds on the watcher's clock (`WardenClock`); nil: no wake-up wanted.
    var wakeAt: UInt64?

    mutating func wake(at time: UInt64) { wakeAt = min(wakeAt ?? .max, time) }
}

/// A cleaning rule. A policy only decides: it reads the pipeline's state and returns goals; the evictor acts on
/// them. Adding one is a new type conforming to this protocol, registered in `PolicySet.registered`, plus its
/// settings and config keys.
protocol CleaningPolicy {
    /// Builds the policy for these settings (nil when no directory uses it).
    init?(_ settings: WardenSettings)

    /// Whether directory `dir` needs its files kept in oldest-first order for this policy.
    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool

    /// Seconds between consultations on a timer of its own (nil: no timer).
    var timerInterval: Int64? { get }

    /// What should be evicted now. `roots` are the roots the trigger concerns (all of them except after changes).
    mutating func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision

    /// What became of one of its goals (one report per root trimmed).
    mutating func outcome(_ goal: EvictionGoal, _ reports: [TrimReport])

    /// Some roots of one of its goals waited for their client's lock: nothing was deleted there (they are tried
    /// again on the policy's wake-up).
    mutating func deferred(_ goal: EvictionGoal)
}

extension CleaningPolicy {
    mutating func outcome(_ goal: EvictionGoal, _ reports: [TrimReport]) {}
    mutating func deferred(_ goal: EvictionGoal) {}
}

/// The policies a watcher enforces, in the order they are consulted (expiry before quota: expired files should
/// not count toward a quota trim).
struct PolicySet {
    static var registered: [any CleaningPolicy.Type] {
        [AgePolicy.self, QuotaPolicy.self, MaxFilesPolicy.self, GroupPolicy.self, LowDiskPolicy.self]
    }

    private(set) var policies: [any CleaningPolicy]

    init(_ settings: WardenSettings) {
        policies = Self.registered.compactMap { $0.init(settings) }
    }

    /// Tells the policy that asked for `goal` what became of it.
    mutating func outcome(_ goal: EvictionGoal, _ reports: [TrimReport]) {
        guard policies.indices.contains(goal.policy) else { return }
        policies[goal.policy].outcome(goal, reports)
    }

    /// Tells the policy that asked for `goal` that some of its roots wait for their client's lock.
    mutating func deferred(_ goal: EvictionGoal) {
        guard policies.indices.contains(goal.policy) else { return }
        policies[goal.policy].deferred(goal)
    }

    /// Whether any policy needs `dir` kept in oldest-first order.
    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool {
        registered.contains { $0.needsOrder(dir, settings) }
    }

    /// Consults every policy (or just `only`, for its timer). `wakeUps` collects, per policy, when it wants to be
    /// consulted again.
    mutating func decide(
        _ trigger: PolicyTrigger, roots: [RootID], state: PipelineState, only: Int? = nil,
        wakeUps: inout [Int: UInt64]
    ) -> PolicyDecision {
        var all = PolicyDecision()
        for i in policies.indices where only == nil || only == i {
            let d = policies[i].decide(trigger, roots: roots, state: state)
            all.goals += d.goals.map {
                var g = $0; g.policy = i; return g
            }
            all.events += d.events
            if let at = d.wakeAt { wakeUps[i] = at }
        }
        return all
    }
}
