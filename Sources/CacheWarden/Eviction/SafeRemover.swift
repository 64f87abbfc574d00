import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Deletes files inside one registered root without ever following a symlink or leaving the root.
///
/// Paths are never handed to `unlink` as strings: each directory is opened through `VerifiedDirectories` (from
/// the root down, `O_DIRECTORY | O_NOFOLLOW`, never across a mount, checked against the device and inode the ledger
/// recorded). A victim is first moved out of its directory into the root's trash (`TrashFolder`) with one
/// `renameat2(RENAME_NOREPLACE)`, then checked there with `fstatat(…, AT_SYMLINK_NOFOLLOW)` and unlinked:
///  - identity: a regular file with the inode the ledger counted;
///  - age (trims, not a clear, which takes everything): its timestamp under the root's order is not newer than
///    the age the ledger ordered it by. An inode number alone is not an identity (tmpfs and ext4 hand a freed
///    number to the next file created), and a file rewritten in place keeps its number; under `mtime` (the
///    default), `ctime` and `opened` either shows as a newer timestamp, and the file is no longer the oldest.
/// What is moved is what is checked and what is unlinked: a client that renames a fresh file over the victim's
/// name an instant before the move has the fresh file moved, found not to be the one counted, and put back
/// (`RENAME_NOREPLACE`: if a still newer file took the name meanwhile, that one stays and the moved one goes beside
/// it, never deleted); a rename over the name after the move only makes a new name.
/// A directory swapped for a symlink, another mount, or a file replaced or rewritten since it was counted is
/// refused (`.changed`: the engine stats it again), not deleted. Directory descriptors are cached for one trim
/// (`finish()` releases them). Where the trash cannot be had (a read-only root, a full inode table), the victim is
/// checked in place and unlinked, as before there was a trash.
///
/// A unit (`evict_unit`) leaves its client's view whole (`SafeRemover+Units`). The trash and the move of one file
/// are in `SafeRemover+Quarantine`.
struct SafeRemover: FileDeleter {
    var directories: VerifiedDirectories
    let fileStat: FileStat
    let rootNode: NodeID
    let device: UInt64
    /// The root's trash, opened (or made) at the first deletion of the trim; the error when it cannot be.
    var trash: Result<OwnedDescriptor, TrashFolder.Problem>?
    /// The root, to remove the trash from, emptied, when the trim is done (an `O_PATH` descriptor of its own).
    var trashParent: OwnedDescriptor?
    /// This filesystem refuses the move into the trash (`EINVAL` from FUSE, `EXDEV`, `EPERM`): victims are checked
    /// and unlinked in place, units go file by file. Set from the root's memory, and when met.
    var renameRefused: Errno?
    /// What went wrong while deleting in the trash (said once per trim by the evictor).
    var trashTrouble: Errno?
    /// Units moved into the trash in this trim, deleted there a moment later.
    var movedUnits = 0
    var leftInTrash: Bool { movedUnits > 0 }
    /// The victim's name with its NUL, reused for every file of the trim (no allocation per file); likewise the
    /// trash names.
    var scratch: [UInt8] = []
    var movedName: [UInt8] = []

    init(root: RootID, in ledger: SizeLedger, fileStat: FileStat, renameRefused: Errno? = nil) {
        directories = VerifiedDirectories(root: root, in: ledger)
        rootNode = ledger.account(root)!.rootNode
        device = ledger.account(root)!.dev
        self.fileStat = fileStat
        self.renameRefused = renameRefused
    }

    mutating func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? {
        let (dirfd, counted): (FileDescriptor, Counted)
        switch locate(r, in: ledger, checkingAge: checkingAge) {
        case .refused(let refused): return refused
        case .found(let d, let c): (dirfd, counted) = (d, c)
        }
        let name = scratch, fileStat = fileStat
        return name.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { Self.recheck($0.baseAddress!, in: dirfd, counted, fileStat).refused }
        }
    }

    mutating func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome {
        let trash = renameRefused == nil ? trashFolder(ledger) : nil
        let (dirfd, counted): (FileDescriptor, Counted)
        switch locate(r, in: ledger, checkingAge: checkingAge) {
        case .refused(let refused): return refused
        case .found(let d, let c): (dirfd, counted) = (d, c)
        }
        let name = scratch, fileStat = fileStat
        return name.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { p in
                guard let trash else { return Self.deleteInPlace(p.baseAddress!, in: dirfd, counted, fileStat) }
                return quarantine(p.baseAddress!, in: dirfd, trash: trash.fd, counted)
            }
        }
    }

    /// The victim checked and unlinked where it is (no trash to be had).
    static func deleteInPlace(
        _ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, _ counted: Counted,
        _ fileStat: FileStat
    ) -> DeletionOutcome {
        if let refused = recheck(name, in: dirfd, counted, fileStat).refused { return refused }
        do throws(Errno) { try Syscall.unlink(at: dirfd, name) } catch {
            return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
        }
        return .removed
    }

    /// What the ledger counted of a victim: what the re-check compares the disk with.
    struct Counted {
        var ino: UInt64
        /// The age it was ordered by; nil: identity only.
        var age: Int64?
        /// Compare the mtime with `age` rather than the order's timestamp: for a hard-linked file under `ctime`,
        /// whose ctime moves when another of its names is unlinked (by this very trim); a write moves the mtime
        /// past the counted ctime, a link or unlink does not.
        var byMtime = false
    }

    /// A victim's verified directory (borrowed from `directories`) and what was counted of it, or why it cannot be
    /// reached.
    private enum Located {
        case found(FileDescriptor, Counted)
        case refused(DeletionOutcome)
    }

    /// Opens the victim's verified directory and puts its NUL-terminated name in `scratch`; returns the directory
    /// and what was counted, or why the victim cannot be reached.
    private mutating func locate(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> Located {
        let rec = ledger.record(r)
        let counted = Counted(
            ino: rec.ino, age: checkingAge ? ledger.victimAge(r) : nil,
            byMtime: fileStat.order == .ctime && rec.linked)
        do throws(Errno) {
            let dirfd = try directories.open(rec.dir, in: ledger)
            scratch.removeAll(keepingCapacity: true)
            ledger.withName(ofRecord: r) { scratch.append(contentsOf: $0) }
            scratch.append(0)
            return .found(dirfd, counted)
        } catch {
            switch error {
            // A directory on the way is gone, renamed, replaced or a symlink: the ledger is behind the disk (its
            // events are still queued). Not "vanished": the file may well exist, elsewhere.
            // `improperLink`: a mount now covers a directory on the way (never crossed; its files are hidden).
            case .staleNFSFileHandle, .tooManySymbolicLinkLevels, .notDirectory, .noSuchFileOrDirectory, .improperLink:
                return .refused(.changed)
            default: return .refused(.failed(error))
            }
        }
    }

    /// Why the name must not be deleted now (nil when it is still the file the ledger counted), and its status.
    static func recheck(
        _ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, _ counted: Counted,
        _ fileStat: FileStat
    ) -> (refused: DeletionOutcome?, status: stat?) {
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(at: dirfd, name) } catch {
            return (error == .noSuchFileOrDirectory ? .vanished : .failed(error), nil)
        }
        guard st.isRegularFile, UInt64(st.st_ino) == counted.ino else { return (.changed, st) }
        guard let age = counted.age else { return (nil, st) }
        var noBirthTime = false
        let onDisk =
            counted.byMtime
            ? st.mtimeNanoseconds : fileStat.ageOnDisk(st, dirfd: dirfd, name: name, noBirthTime: &noBirthTime)
        return (onDisk > age ? .changed : nil, st)
    }

    mutating func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool {
        guard !ledger.isRoot(n) else { return false }
        if withSymlinks, let fd = try? directories.open(n, in: ledger) { Self.unlinkSymlinks(in: fd) }
        guard let parentFD = try? directories.open(ledger.parent(of: n), in: ledger) else { return false }
        let ino = ledger.node(n).ino
        return ledger.name(of: n).withCString { name in
            guard let st = try? Syscall.lstat(at: parentFD, name), st.isDirectory, UInt64(st.st_ino) == ino else {
                return false
            }
            directories.forget(n)
            return (try? Syscall.unlink(at: parentFD, name, directory: true)) != nil
        }
    }

    mutating func finish() {
        if case .success? = trash, let trashParent { TrashFolder.removeIfEmpty(in: trashParent.fd) }
        trash = nil
        trashParent = nil
        directories.close()
    }

    /// Unlinks the symlinks in the verified directory `fd` — the links themselves (`unlinkat` never follows one),
    /// which the ledger does not count (Hugging Face's `snapshots/<rev>/` holds only links into `blobs/`) — so that
    /// a unit deleted whole leaves no folder of dangling links behind.
    private static func unlinkSymlinks(in fd: FileDescriptor) {
        guard let listing = try? Syscall.reopenForListing(fd) else { return }
        var links: [[CChar]] = []
        listing.borrow { listed in
            try? Syscall.readDirectory(listed) { entry in
                let name = entry.name
                if let st = try? Syscall.lstat(at: fd, name), st.isSymlink {
                    links.append(Array(UnsafeBufferPointer(start: name, count: strlen(name) + 1)))
                }
            }
        }
        for link in links { link.withUnsafeBufferPointer { _ = try? Syscall.unlink(at: fd, $0.baseAddress!) } }
    }
}
