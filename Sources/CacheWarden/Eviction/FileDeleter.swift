import CacheWardenLedger
import SystemPackage

/// What became of one deletion.
enum DeletionOutcome: Equatable {
    /// Unlinked: CacheWarden deleted it.
    case removed
    /// Not deleted because this is a dry run: it would have been.
    case simulated
    /// No such name in its verified directory: renamed or deleted by someone else meanwhile. Not ours.
    case vanished
    /// Not what the ledger counted (another inode, not a regular file, a symlink on the way): left alone.
    case changed
    /// The system refused (permission, read-only filesystem, …).
    case failed(Errno)
    /// A client's lock of the root no longer stands as taken (removed, replaced, or a new one appeared): left in
    /// place, and the trim stops.
    case lockLost
    /// Its unit's client holds the unit's lock (or it was lost while held): left in place, counted as in use.
    case lockHeld
    /// Its unit's locks cannot be taken at all (more lock files than the descriptors allowed, `EMFILE`, not a
    /// file): left in place, not counted as in use; an `error` line says why (`UnitClientLocks`).
    case lockUnusable
}

/// What became of moving a unit out of its client's view (`FileDeleter.evictUnit`).
enum UnitOutcome: Equatable {
    /// Renamed into the trash in one step and checked: out of its client's view, deleted there a moment later.
    case moved
    /// A dry run: it would have been.
    case simulated
    /// The rename cannot be had here (`EXDEV`, `EPERM`, no trash): the unit is deleted file by file instead.
    case notAtomic(Errno)
    /// Not the folder counted (gone, renamed, replaced): left alone, and stays in the client's view.
    case changed
    /// The system refused.
    case failed(Errno)
    /// It holds what cannot leave whole, or what the trash could not empty (a mount point, a socket, a FIFO, a
    /// device, a folder that cannot be read, or written and emptied): it stays, and an `error` line says why.
    case kept(String)
    /// A client's lock of the root no longer stands (see `DeletionOutcome.lockLost`): it stays, the trim stops.
    case lockLost
    /// The unit's client holds its lock: it stays.
    case lockHeld
    /// The unit's locks cannot be taken at all (see `DeletionOutcome.lockUnusable`): it stays.
    case lockUnusable
}

/// Carries out the evictor's decisions for one root. `SafeRemover` deletes; `DryRunDeleter` only says it would.
/// The watcher's mode picks the kind once, when it is built: observe mode has no evictor and so no deleter at all.
protocol FileDeleter {
    /// Deletes file record `r` if it is still the regular file the ledger counted (and, `checkingAge`, no newer
    /// than the age it was ordered by).
    mutating func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome
    /// Why `delete` would refuse `r` now, or nil: a look before a group of deletions that must go whole (a unit).
    /// `delete` checks again all the same.
    mutating func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome?
    /// Removes directory `n` if it is empty (never the root) — `withSymlinks`: empty but for symlinks, which go
    /// first (a unit deleted whole) — and returns whether it did.
    mutating func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool
    /// Moves the unit whose folder is node `n`, holding the counted `files`, out of its client's view in one rename
    /// into the root's trash, and deletes it there. The caller checked every file of the unit first (`check`).
    mutating func evictUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome
    /// Why `deleteLink` would refuse a unit's pointer (`evict_pointers`) now, or nil: it is still the symlink found
    /// (its inode, what it says). `.vanished`: gone. (A link whose folder went in this trim is not asked about:
    /// the trim passes over it, `TrimRun.pending`.)
    mutating func checkLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome?
    /// Deletes a unit's pointer if it is still the symlink found: moved into the trash, checked there, unlinked
    /// (else put back: `.changed`). `.vanished`: gone; any other error `.failed`.
    mutating func deleteLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome
    /// Why unit `n` cannot go whole now (`.changed`: it does not hold exactly its counted `files`; `.kept`: it
    /// holds what a unit cannot), or nil: a read-only look, as `evictUnit` takes before its rename, asked before a
    /// unit's pointers go.
    mutating func surveyUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome?
    /// The filesystem refused the move into the trash (set once met; units then go file by file).
    var renameRefused: Errno? { get }
    /// A file moved into the trash and kept (its check failed) could not be put back: its folder went, or no name
    /// was free beside it. It stays in the trash and goes at the next start.
    var trashTrouble: Errno? { get }
    /// Units were moved into the trash, to be deleted there a moment later.
    var leftInTrash: Bool { get }
    /// Releases what the deleter holds (directory descriptors).
    mutating func finish()
    /// The trim is about to delete the unit at `path` (relative to the root) whole, until `endUnit`: nil, or why
    /// it must stay (`.lockHeld`, `.lockLost`). Between the two, deletions are of that unit's files.
    mutating func beginUnit(_ path: [UInt8]) -> DeletionOutcome?
    mutating func endUnit()
}

extension FileDeleter {
    /// Nothing to take before a unit (no client lock, or a dry run).
    mutating func beginUnit(_ path: [UInt8]) -> DeletionOutcome? { nil }
    mutating func endUnit() {}
}

/// The deleter of a dry run: every decision is reported as what would happen, and nothing is touched. It has no
/// code path that could delete.
struct DryRunDeleter: FileDeleter {
    func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome { .simulated }
    func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? { nil }
    func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool { false }
    func evictUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome { .simulated }
    func checkLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome? { nil }
    func deleteLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome { .simulated }
    func surveyUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome? { nil }
    var renameRefused: Errno? { nil }
    var trashTrouble: Errno? { nil }
    var leftInTrash: Bool { false }
    func finish() {}
}

/// The deleter of a run that only reports why a member of a shared trim gave nothing (`MemberTurns.finish`): it is
/// never asked to delete, and refuses all the same. It has no code path that could delete.
struct ReportOnlyDeleter: FileDeleter {
    func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome { .changed }
    func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? { .changed }
    func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool { false }
    func evictUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome { .changed }
    func checkLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome? { .changed }
    func deleteLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome { .changed }
    func surveyUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome? { .changed }
    var renameRefused: Errno? { nil }
    var trashTrouble: Errno? { nil }
    var leftInTrash: Bool { false }
    func finish() {}
}
