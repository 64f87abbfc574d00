import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// One file's way out: moved into the root's trash with `renameat2(RENAME_NOREPLACE)`, checked there, unlinked —
/// or put back. What is moved is what is checked and what is unlinked, so a fresh file a client renames over the
/// victim's name is never the one deleted.
extension SafeRemover {
    /// The errors of a move into the trash that mean this filesystem cannot have it (FUSE's `EINVAL` for
    /// `RENAME_NOREPLACE`, a mount in the way, a policy that forbids it): deletions then happen in place.
    static let renameUnsupported: Set<Errno> = [.invalidArgument, .improperLink, .notPermitted, .resourceBusy]

    /// Moves the victim into the trash, checks it there, and unlinks it; puts back what is not the file counted.
    mutating func quarantine(
        _ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, trash: FileDescriptor, _ counted: Counted
    )
        -> DeletionOutcome
    {
        // Under `order = ctime` the move itself sets the ctime: the full check is made in place first, and after
        // the move the file must be that very one (inode, mtime, size).
        var before: stat?
        if fileStat.order == .ctime {
            let (refused, st) = Self.recheck(name, in: dirfd, counted, fileStat)
            if let refused { return refused }
            before = st
        }
        TrashFolder.nextEntryName(UInt8(ascii: "f"), into: &movedName)
        let moved = movedName
        return moved.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { q in
                moveCheckUnlink(name, in: dirfd, as: q.baseAddress!, in: trash, counted, before: before)
            }
        }
    }

    private mutating func moveCheckUnlink(
        _ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, as q: UnsafePointer<CChar>,
        in trash: FileDescriptor, _ counted: Counted, before: stat?
    ) -> DeletionOutcome {
        do throws(Errno) { try Syscall.renameNoReplace(at: dirfd, name, to: trash, q) } catch {
            if Self.renameUnsupported.contains(error) {
                renameRefused = error
                return Self.deleteInPlace(name, in: dirfd, counted, fileStat)
            }
            guard error == .noSuchFileOrDirectory, (try? Syscall.lstat(at: dirfd, name)) != nil else {
                return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
            }
            // The victim is there: the trash went (a client's own cleaner removed it). Made again at the next trim.
            self.trash = .failure(.system(error))
            return Self.deleteInPlace(name, in: dirfd, counted, fileStat)
        }
        let refused: DeletionOutcome?
        if let before {
            let st = try? Syscall.lstat(at: trash, q)
            refused =
                st.map {
                    $0.isRegularFile && $0.st_ino == before.st_ino && $0.mtimeNanoseconds == before.mtimeNanoseconds
                        && $0.st_size == before.st_size
                } == true ? nil : .changed
        } else {
            refused = Self.recheck(q, in: trash, counted, fileStat).refused
        }
        guard let refused else {
            do throws(Errno) { try Syscall.unlink(at: trash, q) } catch {
                putBack(q, from: trash, as: name, in: dirfd)
                return .failed(error)
            }
            return .removed
        }
        putBack(q, from: trash, as: name, in: dirfd)
        return refused == .vanished ? .changed : refused
    }

    /// Moves what the trash holds as `moved` back under `name` in `parent`; when a newer entry took the name
    /// meanwhile (a client renamed a fresh file over the victim's name twice), beside it
    /// (`<name>.restored-by-cachewarden-N`). What failed its re-check is never deleted, even where the client's own
    /// rename would have replaced it: a deletion is only ever of a checked victim, and says so in an `evict` line.
    mutating func putBack(
        _ moved: UnsafePointer<CChar>, from trash: FileDescriptor, as name: UnsafePointer<CChar>,
        in parent: FileDescriptor
    ) {
        var failure: Errno
        do throws(Errno) { try Syscall.renameNoReplace(at: trash, moved, to: parent, name); return } catch {
            failure = error
        }
        // Beside the name only when a newer entry holds it; the suffix fits in a name of 255 bytes.
        let base = UnsafeRawBufferPointer(start: name, count: min(strlen(name), 255 - 32))
        for attempt in 1...100 where failure == .fileExists {
            let beside = Array(base) + Array(".restored-by-cachewarden-\(attempt)".utf8)
            do throws(Errno) {
                try beside.withCString { b throws(Errno) in try Syscall.renameNoReplace(at: trash, moved, to: parent, b)
                }
                return
            } catch { failure = error }
        }
        trashTrouble = failure
    }

    /// The root's trash, opened or made once per trim; nil when it cannot be (the first problem is kept).
    mutating func trashFolder(_ ledger: SizeLedger) -> OwnedDescriptor? {
        if trash == nil {
            do throws(Errno) {
                let root = try directories.open(rootNode, in: ledger)
                // A descriptor of its own for `finish`: `directories` may close its cached one before then.
                trashParent = try Syscall.openDirectoryPath(at: root, ".")
                trash = Result { () throws(TrashFolder.Problem) in try TrashFolder.open(in: root) }
            } catch {
                trash = .failure(.system(error))
            }
        }
        return try? trash?.get()
    }

    /// Why the trash could not be used in this trim, if it was wanted and could not be.
    var trashProblem: TrashFolder.Problem? {
        if case .failure(let problem)? = trash { return problem }
        return nil
    }
}
