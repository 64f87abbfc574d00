import CacheWardenLedger

/// The members of a shared trim — a group over its budget, the directories of a filesystem low on space — taking
/// turns: one `TrimRun` per member, made at its first turn, each turn deleting the member's next victim under the
/// member's own rules (a whole unit with `evict_unit`; never a protected, too young or vetoed file: `TrimRun`).
///
/// The trim goes in rounds. Files in use (being written, or open with `spare_open`) wait for a round of their own,
/// once no member has anything else: a budget spares open files while other candidates remain, as one directory's
/// trim does. A member that cannot give now (`EvictionGoal.cannotGive`: it waits for `trim_after_idle`) is skipped
/// at its turn, so the others give its share, unless the round overrides that reason (a low-disk emergency overrides
/// the idle wait). Every member that was asked and gave nothing says why on its `trim` line (`skipped`) — but for a
/// member whose client holds its lock: it has no run and no `trim` line, its `deferred` line says why, and the
/// others give its share all the same. A member that lost its client's lock during the trim gives no more.
struct MemberTurns {
    private let goal: EvictionGoal
    private var runs: [RootID: TrimRun] = [:]
    /// Members skipped at their turn (they have no run unless a later round overrode the reason).
    private var skips: [RootID: MemberSkip] = [:]
    /// Members out of the current round: nothing to give, or skipped.
    private var out: Set<RootID> = []
    /// Members with nothing left to give in any round (they had nothing even with files in use allowed).
    private var drained: Set<RootID> = []
    private var takesInUse = false
    private var overriding: Set<MemberSkip> = []
    /// Bytes freed by every member so far (for a dry run: what would be freed).
    private(set) var freed: Int64 = 0

    init(_ goal: EvictionGoal) { self.goal = goal }

    /// Starts a round: with `inUse`, files in use may go; members skipped for a reason in `overriding` give too.
    mutating func nextRound(inUse: Bool, overriding: Set<MemberSkip> = []) {
        out = drained
        takesInUse = inUse
        self.overriding = overriding
    }

    /// Whether `id` may still be asked in this round.
    func isOpen(_ id: RootID) -> Bool { !out.contains(id) }

    /// What `id` holds now, as its trim leaves it (a dry run subtracts what it would delete).
    func usage(_ id: RootID, _ ledger: SizeLedger) -> Int64 { runs[id]?.projected ?? ledger.total(id) }

    /// Asks `id` for its next victim (its run made by `make` at its first victim; nil: it is not trimmed at all).
    /// Returns false, leaving it out of the round, when it has nothing to give or cannot give now.
    mutating func take(
        from id: RootID, _ ledger: SizeLedger, _ context: inout EvictionContext,
        making make: (inout EvictionContext) -> TrimRun?
    ) -> Bool {
        guard !out.contains(id) else { return false }
        if let reason = goal.cannotGive[id], !overriding.contains(reason) {
            skips[id] = reason
            out.insert(id)
            return false
        }
        guard var run = runs.removeValue(forKey: id) ?? make(&context) else {
            out.insert(id)
            drained.insert(id)
            // Its client holds its lock: a `deferred` line says so, and no `trim` line (not one for an earlier skip).
            if context.clientLocks.busy[id] != nil { skips[id] = nil }
            return false
        }
        defer { runs[id] = run }
        skips[id] = nil
        run.sparesInUse = !takesInUse
        let projected = run.projected
        guard run.evictNextVictim(ledger, &context.events) else {
            out.insert(id)
            if takesInUse || run.lockLost { drained.insert(id) }
            return false
        }
        freed += projected - run.projected
        return true
    }

    /// Finishes every member's run, in the goal's order: its `trim` line says what it gave, or why it gave nothing
    /// (a skipped member gets a run of its own for its line, made by `make`, which deletes nothing and takes no lock).
    mutating func finish(_ context: inout EvictionContext, making make: (RootID, inout EvictionContext) -> TrimRun?)
        -> EvictionOutcome
    {
        var outcome = EvictionOutcome()
        for id in goal.roots {
            guard var run = runs.removeValue(forKey: id) ?? (skips[id] == nil ? nil : make(id, &context)) else {
                continue
            }
            if run.removed == 0 { run.skipped = skips[id] ?? run.reasonForNothing() }
            outcome.add(&run, &context.events)
        }
        return outcome
    }
}
