extension TrimRun {
    /// A deletion a client's lock refused: the root's lock lost stops the trim (`lockLost`: nothing more goes, the
    /// engine files the trim as waiting); a unit's lock held keeps that unit (counted as in use), and the trim goes
    /// on with the next; a unit whose locks cannot be taken stays too, not counted as in use (its `error` line says
    /// why).
    mutating func noteLockRefusal(_ outcome: DeletionOutcome) {
        switch outcome {
        case .lockLost: lockLost = true
        case .lockHeld: spared.inUse += 1
        default: break
        }
    }
}
