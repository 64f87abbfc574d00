import CacheWardenLedger

/// What a goal may change besides the disk, lent to the evictor by the engine for the goal's length
/// (`Engine.evict`): the events it says and the client locks it takes; and what it reads of the rest, as values
/// (the roots, the clock, `client_lock_wait`). The ledger comes as a parameter of its own, a value too: nothing in
/// eviction can write it. What a trim deleted goes back in its `EvictionOutcome` (with a unit's rename found
/// refused and the units left in the trash), and the engine applies it.
struct EvictionContext {
    var events: EventOutbox
    var clientLocks: ClientLockTable
    let roots: RootRegistry
    let clock: any WardenClock
    /// `client_lock_wait`, seconds.
    let clientLockWait: Int64
}
