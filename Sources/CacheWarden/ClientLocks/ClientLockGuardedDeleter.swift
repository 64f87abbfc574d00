import SystemPackage

/// A deleter that deletes only while the root's client locks still stand (`HeldClientLocks.stillHeld()`): a lock
/// file removed or replaced during the trim (or one that was missing and appeared) means a client may now hold
/// the new one, so every deletion after that is refused (`.vanished`: left in place, not an `evict`) and the
/// engine files the trim as waiting. Deleting file by file in a root of units, it also takes each file's unit's
/// locks first (`UnitClientLocks`) and leaves the files of a unit whose lock is held.
///
/// Files deleted one by one are checked one by one (one `fstatat` per lock file and deletion). A unit is checked
/// once, at its first look (`check`; its own locks were taken by the trim), and then goes whole: never half a unit.
struct ClientLockGuardedDeleter: FileDeleter {
    var inner: any FileDeleter
    let held: HeldClientLocks
    let units: UnitClientLocks?
    /// Where the trim is: deleting files one by one, or a unit looked at (`check`) and being deleted.
    private var inUnit = false
    private var unitDeleting = false

    init(inner: any FileDeleter, held: HeldClientLocks, units: UnitClientLocks?) {
        self.inner = inner
        self.held = held
        self.units = units
    }

    mutating func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? {
        if !inUnit || unitDeleting {
            // The first look at a unit (the one before it, if any, is done).
            inUnit = true
            unitDeleting = false
            guard held.stillHeld() else { return .vanished }
        } else if held.lost != nil {
            return .vanished
        }
        return inner.check(r, in: ledger, checkingAge: checkingAge)
    }

    mutating func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome {
        if inUnit {
            unitDeleting = true
            if held.lost != nil { return .vanished }
        } else if !held.stillHeld() || units?.admit(r, in: ledger) == false {
            return .vanished
        }
        return inner.delete(r, in: ledger, checkingAge: checkingAge)
    }

    /// A unit checked whole (`check`) goes in one rename, unless a lock file changed since: then it stays.
    mutating func evictUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome {
        unitDeleting = true
        if held.lost != nil { return .changed }
        return inner.evictUnit(n, files: files, in: ledger)
    }

    var renameRefused: Errno? { inner.renameRefused }
    var trashTrouble: Errno? { inner.trashTrouble }
    var leftInTrash: Bool { inner.leftInTrash }

    mutating func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool {
        held.lost == nil && inner.deleteEmptyDirectory(n, in: ledger, withSymlinks: withSymlinks)
    }

    mutating func finish() {
        units?.release()
        inner.finish()
    }
}
