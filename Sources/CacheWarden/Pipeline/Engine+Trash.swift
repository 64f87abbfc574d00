import CacheWardenFilesystem

/// Units moved out of their clients' view are deleted in the trash a moment later, not at once: a reader that
/// opened a unit's folder just before its rename (and lists it, or links its files, through that descriptor) has
/// that moment to finish with it whole. The ledger and the `evict` line took the unit out at its rename already.
extension Engine {
    /// How long a moved unit waits in the trash.
    static let trashDelay = Nanoseconds.span(timeInterval: 0.25)

    /// Arms the one-shot timer that empties the trashes (once per delay, whatever the number of roots).
    func scheduleTrashEmptying() {
        guard trashTimer == nil else { return }
        // A one-shot report or clear has no timers: its trash is emptied when it ends (`teardown`).
        guard backend != nil else { return }
        trashTimer = state.clock.schedule(
            at: Nanoseconds.after(state.clock.uptimeNanoseconds, Self.trashDelay), on: queue
        ) {
            @Sendable [unowned self] in
            self.trashTimer = nil
            self.emptyTrashes()
            self.deliver()
        }
    }

    /// Deletes what this process moved into each waiting root's trash, through a verified descriptor of the root;
    /// an `error` line of kind `trash` says what could not be (it goes at the next start).
    func emptyTrashes() {
        assertOnQueue(queue)
        let roots = state.trashToEmpty
        state.trashToEmpty.removeAll()
        for id in roots {
            guard let rt = state.roots[id], rt.lost == nil, state.ledger.account(id) != nil else { continue }
            var directories = VerifiedDirectories(root: id, in: state.ledger)
            defer { directories.close() }
            guard let root = try? directories.open(state.ledger.account(id)!.rootNode, in: state.ledger) else {
                continue
            }
            if let trouble = TrashFolder.empty(in: root) {
                state.events.error(
                    "something in \(TrashFolder.name) could not be deleted (\(trouble)); it goes at the next start",
                    dir: rt.name, kind: "trash")
            }
        }
    }
}
