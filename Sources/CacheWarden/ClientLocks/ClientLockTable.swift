import CacheWardenLedger

/// The engine's client locks (`PipelineState.clientLocks`): those taken for the goal running now, released when it
/// ends, and the trims waiting for a client's lock, each retried with back-off (1, 2, 4 … 60 s) until it runs.
struct ClientLockTable {
    /// A waiting trim: a root, and the reason of the trim that waits (one policy each; `manual`, `clear`).
    struct Key: Hashable {
        var root: RootID
        var reason: TrimReason
    }

    /// A trim waiting for a client's lock.
    struct Waiting {
        var dir: String
        var reason: TrimReason
        /// The policy that asked, whose wake-up retries it; nil for a request (`trim`, `clear`), which the command
        /// that sent it retries.
        var policy: Int?
        /// Uptime nanoseconds: when it first found the lock busy, when it may try next, when it was last asked for.
        var since: UInt64
        var next: UInt64
        var lastAsked: UInt64
        var attempts = 1
        /// What keeps it waiting (the holders as found when it began, or when it went past `client_lock_wait`).
        var busy: ClientLockBusy
        /// Past `client_lock_wait`: its `error` line is out.
        var overdue = false
    }

    /// A request's wait is forgotten when it has not been asked for again within this many seconds (the commands
    /// ask at least every 5 s while they wait); its next ask is a new wait, with a new `deferred` line.
    static let requestWindow: UInt64 = 30_000_000_000

    /// Every lock file this engine holds, shared by the roots' takes and the units' (`LockFileRegistry`).
    let files = LockFileRegistry()
    /// Root-level locks taken for the goal running now.
    var held: [RootID: HeldClientLocks] = [:]
    /// Per-unit locks of the goal running now, one set per root for all its passes: a unit found busy stays busy
    /// (a clear's prune pass included).
    var units: [RootID: UnitClientLocks] = [:]
    /// The unit problems said (`error` lines of kind `client_lock`), by directory, lock and reason: each once.
    var said = Set<String>()
    /// What the goal running now found busy, by root: `tried` when a lock was tried (not skipped by back-off).
    var busy: [RootID: (busy: ClientLockBusy, tried: Bool)] = [:]
    var waiting: [Key: Waiting] = [:]

    /// Seconds before the next try after `attempts` tries: 1, 2, 4, 8, 16, 32, then 60.
    static func backoff(_ attempts: Int) -> UInt64 { min(60, UInt64(1) << UInt64(min(max(attempts, 1) - 1, 6))) }

    /// Releases every lock this table holds (the end of a goal, a request, or the engine).
    mutating func releaseAll() {
        for held in held.values { held.release() }
        held.removeAll()
        for units in units.values { units.release() }
        units.removeAll()
    }

    /// Whether `w` is current: a policy's wait until it is resolved, a request's while it is asked for.
    static func isCurrent(_ w: Waiting, now: UInt64) -> Bool {
        w.policy != nil || elapsed(w.lastAsked, now) <= requestWindow
    }

    /// Nanoseconds from `since` to `now` (0 when `now` is not later).
    static func elapsed(_ since: UInt64, _ now: UInt64) -> UInt64 { now > since ? now - since : 0 }
}
