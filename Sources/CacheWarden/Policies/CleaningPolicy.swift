/// When the pipeline consults the policies.
enum PolicyTrigger: Equatable, Sendable {
    /// Right after a root's initial scan (and when it comes back after being lost).
    case startup
    /// After a batch of changes touched these roots.
    case changes
    /// The policy's own timer fired.
    case timer
    /// New settings were applied.
    case reload
}

/// What a policy wants done: bring some roots to a target, oldest files first.
struct EvictionGoal: Equatable {
    enum Target: Equatable {
        /// The root's total at or below this many bytes.
        case total(Int64)
        /// Free this many bytes, taking the roots in the goal's order.
        case free(Int64)
        /// No file with an age key older than this (nanoseconds since 1970).
        case olderThan(Int64)
        /// Every file (a clear).
        case everything
    }
    var reason: TrimReason
    var roots: [RootID]
    var target: Target
}

/// A policy's decision: goals for the evictor, and facts it observed on the way (a `low_disk` report).
struct PolicyDecision {
    var goals: [EvictionGoal] = []
    var events: [WardenEvent.Kind] = []
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
}

/// The policies a watcher enforces, in the order they are consulted (expiry before quota: expired files should
/// not count toward a quota trim).
struct PolicySet {
    static var registered: [any CleaningPolicy.Type] { [AgePolicy.self, QuotaPolicy.self, LowDiskPolicy.self] }

    private(set) var policies: [any CleaningPolicy]

    init(_ settings: WardenSettings) {
        policies = Self.registered.compactMap { $0.init(settings) }
    }

    /// Whether any policy needs `dir` kept in oldest-first order.
    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool {
        registered.contains { $0.needsOrder(dir, settings) }
    }

    /// Consults every policy (or just `only`, for its timer).
    mutating func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState, only: Int? = nil) -> PolicyDecision {
        var all = PolicyDecision()
        for i in policies.indices where only == nil || only == i {
            let d = policies[i].decide(trigger, roots: roots, state: state)
            all.goals += d.goals
            all.events += d.events
        }
        return all
    }
}
