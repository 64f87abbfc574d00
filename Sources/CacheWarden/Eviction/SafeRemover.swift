import Glibc
import SystemPackage

/// Deletes files inside one registered root without ever following a symlink or leaving the root.
///
/// Paths are never handed to `unlink` as strings: each directory is opened through `VerifiedDirectories` (from
/// the root down, `O_DIRECTORY | O_NOFOLLOW`, checked against the device and inode the ledger recorded), and every
/// victim is re-checked with `fstatat(…, AT_SYMLINK_NOFOLLOW)` right before `unlinkat` on that descriptor:
///  - identity: a regular file with the inode the ledger counted;
///  - age (trims, not a clear, which takes everything): its timestamp under the root's order is not newer than
///    the age the ledger ordered it by. An inode number alone is not an identity (tmpfs and ext4 hand a freed
///    number to the next file created), and a file rewritten in place keeps its number; under `mtime` (the
///    default), `ctime` and `opened` either shows as a newer timestamp, and the file is no longer the oldest.
/// A directory swapped for a symlink, another mount, or a file replaced or rewritten since it was counted is
/// refused (`.changed`: the engine stats it again), not deleted. Directory descriptors are cached for one trim
/// (`finish()` releases them).
///
/// The re-check is never skipped. On tmpfs it adds about a fifth to a bare `unlinkat`; on a disk, where the
/// `unlinkat` costs ~100 µs, under 1 % (docs/performance.md).
struct SafeRemover: FileDeleter {
    private var directories: VerifiedDirectories
    private let fileStat: FileStat
    /// The victim's name with its NUL, reused for every file of the trim (no allocation per file).
    private var scratch: [UInt8] = []

    init(root: RootID, in ledger: SizeLedger, fileStat: FileStat) {
        directories = VerifiedDirectories(root: root, in: ledger)
        self.fileStat = fileStat
    }

    mutating func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? {
        let fileStat = fileStat
        let outcome = withVictim(r, in: ledger, checkingAge: checkingAge) { name, dirfd, counted in
            Self.recheck(name, in: dirfd, counted, fileStat) ?? .removed
        }
        return outcome == .removed ? nil : outcome
    }

    mutating func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome {
        let fileStat = fileStat
        return withVictim(r, in: ledger, checkingAge: checkingAge) { name, dirfd, counted in
            if let refused = Self.recheck(name, in: dirfd, counted, fileStat) { return refused }
            do throws(Errno) { try Syscall.unlink(at: dirfd, name) } catch {
                return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
            }
            return .removed
        }
    }

    /// What the ledger counted of a victim: what the re-check compares the disk with.
    private struct Counted {
        var ino: UInt64
        /// The age it was ordered by; nil: identity only.
        var age: Int64?
        /// Compare the mtime with `age` rather than the order's timestamp: for a hard-linked file under `ctime`,
        /// whose ctime moves when another of its names is unlinked (by this very trim); a write moves the mtime
        /// past the counted ctime, a link or unlink does not.
        var byMtime = false
    }

    /// Opens the victim's verified directory and calls `body` with its NUL-terminated name there.
    private mutating func withVictim(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool,
                                     _ body: (UnsafePointer<CChar>, Int32, Counted) -> DeletionOutcome) -> DeletionOutcome {
        let rec = ledger.record(r)
        let counted = Counted(ino: rec.ino, age: checkingAge ? ledger.victimAge(r) : nil,
                              byMtime: fileStat.order == .ctime && rec.linked)
        do throws(Errno) {
            let dirfd = try directories.open(rec.dir, in: ledger)
            scratch.removeAll(keepingCapacity: true)
            ledger.names.withName(rec.name) { scratch.append(contentsOf: $0) }
            scratch.append(0)
            return scratch.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { body($0.baseAddress!, dirfd, counted) }
            }
        } catch {
            switch error {
            // A directory on the way is gone, renamed, replaced or a symlink: the ledger is behind the disk (its
            // events are still queued). Not "vanished": the file may well exist, elsewhere.
            // `improperLink`: a mount now covers a directory on the way (never crossed; its files are hidden).
            case .staleNFSFileHandle, .tooManySymbolicLinkLevels, .notDirectory, .noSuchFileOrDirectory, .improperLink: return .changed
            default: return .failed(error)
            }
        }
    }

    /// Why the name must not be deleted now, or nil when it is still the file the ledger counted.
    private static func recheck(_ name: UnsafePointer<CChar>, in dirfd: Int32, _ counted: Counted,
                                _ fileStat: FileStat) -> DeletionOutcome? {
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(at: dirfd, name) } catch {
            return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
        }
        guard st.isRegularFile, UInt64(st.st_ino) == counted.ino else { return .changed }
        guard let age = counted.age else { return nil }
        var noBirthTime = false
        let onDisk = counted.byMtime ? st.mtimeNanoseconds : fileStat.ageOnDisk(st, dirfd: dirfd, name: name, noBirthTime: &noBirthTime)
        return onDisk > age ? .changed : nil
    }

    mutating func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool {
        guard !ledger.isRoot(n) else { return false }
        if withSymlinks, let fd = try? directories.open(n, in: ledger) { Self.unlinkSymlinks(in: fd) }
        guard let parentFD = try? directories.open(ledger.parent(of: n), in: ledger) else { return false }
        let ino = ledger.node(n).ino
        return ledger.name(of: n).withCString { name in
            guard let st = try? Syscall.lstat(at: parentFD, name), st.isDirectory, UInt64(st.st_ino) == ino else { return false }
            directories.forget(n)
            return (try? Syscall.unlink(at: parentFD, name, directory: true)) != nil
        }
    }

    mutating func finish() { directories.close() }

    /// Unlinks the symlinks in the verified directory `fd` — the links themselves (`unlinkat` never follows one),
    /// which the ledger does not count (Hugging Face's `snapshots/<rev>/` holds only links into `blobs/`) — so that
    /// a unit deleted whole leaves no folder of dangling links behind.
    private static func unlinkSymlinks(in fd: Int32) {
        guard let listing = try? OwnedDescriptor(Syscall.reopenForListing(fd)) else { return }
        var links: [[CChar]] = []
        try? Syscall.readDirectory(listing.fd) { entry in
            let name = entry.name
            if let st = try? Syscall.lstat(at: fd, name), st.isSymlink { links.append(Array(UnsafeBufferPointer(start: name, count: strlen(name) + 1))) }
        }
        for link in links { link.withUnsafeBufferPointer { _ = try? Syscall.unlink(at: fd, $0.baseAddress!) } }
    }
}
