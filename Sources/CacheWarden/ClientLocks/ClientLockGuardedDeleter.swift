import CacheWardenLedger
import SystemPackage

/// A deleter that deletes only while the client locks stand. The root's (`HeldClientLocks.stillHeld()`): a lock file
/// removed or replaced during the trim, or one that was missing and appeared, or a new file matching a pattern,
/// means a client may now hold a lock that was not taken, so that deletion and every later one is refused
/// (`.lockLost`: left in place, and the trim stops there). And each unit's (`UnitClientLocks`): a file of a unit
/// whose lock is held, or was found held at any time during this trim, is never deleted (`.lockHeld`), nor one
/// whose locks cannot be taken (`.lockUnusable`).
///
/// The trim brackets each unit it deletes whole (`beginUnit` … `endUnit`): the unit's locks are taken at its
/// start, and every lock, the root's and the unit's, is looked at again right before the rename that takes the unit
/// away and before each file of a unit deleted file by file. Outside a bracket, every deletion looks at the root's
/// locks again and takes its file's unit's locks first.
struct ClientLockGuardedDeleter: FileDeleter {
    var inner: any FileDeleter
    let held: HeldClientLocks
    let units: UnitClientLocks?
    /// The unit being deleted whole (between `beginUnit` and `endUnit`).
    private var unit: [UInt8]?

    init(inner: any FileDeleter, held: HeldClientLocks, units: UnitClientLocks?) {
        self.inner = inner
        self.held = held
        self.units = units
    }

    mutating func beginUnit(_ path: [UInt8]) -> DeletionOutcome? {
        unit = path
        guard held.stillHeld() else { return .lockLost }
        return units?.begin(path)
    }

    mutating func endUnit() {
        unit = nil
        units?.end()
    }

    /// Whether every lock that covers `r` stands now, looked at afresh: nil, or why `r` must stay. Within a unit,
    /// the unit's locks, and those of the unit `r` is in when it is another (a companion file).
    private func refusal(_ r: RecordID, _ ledger: SizeLedger) -> DeletionOutcome? {
        guard held.stillHeld() else { return .lockLost }
        return units?.admit(r, in: ledger)
    }

    mutating func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? {
        // Within a unit its locks were looked at by `beginUnit`, and are again before it goes.
        if unit != nil, held.lost != nil { return .lockLost }
        if unit == nil, let refused = refusal(r, ledger) { return refused }
        return inner.check(r, in: ledger, checkingAge: checkingAge)
    }

    mutating func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome {
        if let refused = refusal(r, ledger) { return refused }
        return inner.delete(r, in: ledger, checkingAge: checkingAge)
    }

    /// A unit checked whole (`check`) goes in one rename, unless a lock changed since: then it stays.
    mutating func evictUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome {
        guard held.stillHeld() else { return .lockLost }
        if let unit, let units, let refused = units.stillHeld(unit) {
            return refused == .lockUnusable ? .lockUnusable : .lockHeld
        }
        return inner.evictUnit(n, files: files, in: ledger)
    }

    /// A unit's pointer (`evict_pointers`) lies outside the unit: the root's locks, the unit's being deleted, and
    /// those of the unit the pointer's folder is in (if any), all looked at afresh.
    private func refusal(link: PointerLink, _ ledger: SizeLedger) -> DeletionOutcome? {
        guard held.stillHeld() else { return .lockLost }
        return units?.admit(folder: link.dir, in: ledger)
    }

    mutating func checkLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome? {
        if let refused = refusal(link: link, ledger) { return refused }
        return inner.checkLink(link, in: ledger)
    }

    mutating func deleteLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome {
        if let refused = refusal(link: link, ledger) { return refused }
        return inner.deleteLink(link, in: ledger)
    }

    /// A read-only look: nothing to guard.
    mutating func surveyUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome? {
        inner.surveyUnit(n, files: files, in: ledger)
    }

    var renameRefused: Errno? { inner.renameRefused }
    var trashTrouble: Errno? { inner.trashTrouble }
    var leftInTrash: Bool { inner.leftInTrash }

    mutating func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool {
        guard held.stillHeld() else { return false }
        // Inside the unit being deleted, its locks; elsewhere, those of the unit the folder is in (if any).
        if let units, units.admit(folder: n, in: ledger) != nil { return false }
        return inner.deleteEmptyDirectory(n, in: ledger, withSymlinks: withSymlinks)
    }

    mutating func finish() {
        units?.release()
        inner.finish()
    }
}
