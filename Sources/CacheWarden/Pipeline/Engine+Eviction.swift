import CacheWardenLedger

/// Where what the evictor did reaches the state. The evictor cannot write the ledger: it gets it as a value, and
/// the rest it may change (the events, the client locks) lent in an `EvictionContext`. It hands back what it
/// deleted (`EvictionOutcome`), and the engine applies that here, in one place, before the backend's next changes
/// are read (the backend is held while a goal runs), so the deletions' `IN_DELETE`s find nothing left to subtract.
extension Engine {
    /// Runs `goal` and applies what it did. The outcome's `changed` then holds every name to stat again.
    func evict(_ goal: EvictionGoal, with evictor: Evictor) -> EvictionOutcome {
        keepVictimOrder(goal.roots)
        var outcome = withEvictionContext { ledger, context in evictor.run(goal, ledger, &context) }
        apply(&outcome)
        return outcome
    }

    /// Clears `ids` (`ClearRunner`) and applies what went.
    func clearRoots(_ ids: [RootID], with evictor: Evictor, progress: (@Sendable (ClearProgress) -> Void)?)
        -> (report: ClearReport, outcome: EvictionOutcome)
    {
        keepVictimOrder(ids)
        var (report, outcome) = withEvictionContext { ledger, context in
            ClearRunner(evictor: evictor).run(ids, ledger, &context, progress: progress)
        }
        apply(&outcome)
        return (report, outcome)
    }

    /// A trim walks its root's victims oldest first: the root keeps its victim heap from now on (built here the
    /// first time, in linear time; a root with a quota has it from its scan).
    private func keepVictimOrder(_ ids: [RootID]) {
        for id in ids where state.roots[id]?.lost == nil { state.ledger.setOrdered(id, true) }
    }

    /// Lends the state's events (moved, not copied) and client locks to `body`, and takes them back after; the
    /// ledger goes as a value.
    private func withEvictionContext<R>(_ body: (SizeLedger, inout EvictionContext) -> R) -> R {
        var context = EvictionContext(
            events: EventOutbox(), clientLocks: state.clientLocks, roots: state.roots, clock: state.clock,
            clientLockWait: state.settings.clientLockWait)
        swap(&context.events, &state.events)
        defer {
            swap(&context.events, &state.events)
            state.clientLocks = context.clientLocks
        }
        return body(state.ledger, &context)
    }

    /// Applies what each trim deleted (the names their removal leaves to stat again, other names of a deleted
    /// file's inode, join `changed`), a unit's rename found refused, and the units left in the trash.
    private func apply(_ outcome: inout EvictionOutcome) {
        for pending in outcome.removals { outcome.changed += state.ledger.apply(pending) }
        outcome.removals = []
        for (id, refused) in outcome.renameRefused where state.roots[id]?.renameRefused == nil {
            state.roots[id]?.renameRefused = refused
        }
        state.trashToEmpty.formUnion(outcome.leftInTrash)
    }
}
