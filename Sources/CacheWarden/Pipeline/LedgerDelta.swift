import CacheWardenLedger

/// What the ledger updater changed since it last handed over: the value the engine takes from it after each step
/// (`LedgerUpdater.apply`, `.restat`, `.audit`) and passes to the next stages. Nothing flows back: the updater
/// never calls the policies, the evictor or the backend (its scans watch through a `WatchPort`).
struct LedgerDelta {
    /// Roots whose totals may have changed since the policies last looked.
    var touched = Set<RootID>()
    /// Roots that saw any activity (writes, and opens where watched): what idle deferral waits on.
    var active = Set<RootID>()
    /// Changes were lost: every root is to be re-read.
    var overflowed = false
    /// Roots whose directory went away, and why (to be reported and watched for).
    var lostRoots: [(RootID, String)] = []
    /// Roots where a name may have changed a counted file unseen (see `LedgerUpdater.noteUnseen`): to be audited.
    var suspects = Set<RootID>()

    mutating func merge(_ other: LedgerDelta) {
        touched.formUnion(other.touched)
        active.formUnion(other.active)
        overflowed = overflowed || other.overflowed
        lostRoots += other.lostRoots
        suspects.formUnion(other.suspects)
    }
}
