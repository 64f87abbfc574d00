import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// A unit's pointers (`evict_pointers`): the symlinks leading into it go as files do. Each is looked at in its
/// verified folder (a symlink, the inode found, saying what it said), moved into the root's trash with one
/// `renameat2(RENAME_NOREPLACE)`, looked at again there, and unlinked there — or put back under its name (beside
/// it if that is taken). What is moved is what is checked and what is unlinked: a client that puts something else
/// under the link's name an instant before the move has that moved, found not to be the link, and put back. Where
/// the trash cannot be had, the link is checked and unlinked in place, as a file would be. And the survey of a
/// unit's folder, read-only, for the look before its pointers go.
extension SafeRemover {
    mutating func checkLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome? {
        // A folder the ledger no longer has went, and the links in it with it (one gone in this trim the trim
        // passes over itself: `TrimRun.pending`).
        guard ledger.isLive(link.dir) else { return .vanished }
        let dirfd: FileDescriptor
        do throws(Errno) { dirfd = try directories.open(link.dir, in: ledger) } catch { return .failed(error) }
        return (link.name + [0]).withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { Self.recheck($0.baseAddress!, in: dirfd, link) }
        }
    }

    mutating func deleteLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome {
        let trash = renameRefused == nil ? trashFolder(ledger) : nil
        guard ledger.isLive(link.dir) else { return .vanished }
        let dirfd: FileDescriptor
        do throws(Errno) { dirfd = try directories.open(link.dir, in: ledger) } catch { return .failed(error) }
        TrashFolder.nextEntryName(UInt8(ascii: "f"), into: &movedName)
        let moved = movedName
        return (link.name + [0]).withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { name in
                moved.withUnsafeBufferPointer { m in
                    m.withMemoryRebound(to: CChar.self) { m in
                        if let refused = Self.recheck(name.baseAddress!, in: dirfd, link) { return refused }
                        guard let trash else { return Self.unlinkInPlace(name.baseAddress!, in: dirfd, link) }
                        return quarantineLink(name.baseAddress!, in: dirfd, as: m.baseAddress!, in: trash.fd, link)
                    }
                }
            }
        }
    }

    mutating func surveyUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome? {
        guard !ledger.isRoot(n), let fd = try? directories.open(n, in: ledger) else { return .changed }
        return Self.refusal(holding: Set(files.map { ledger.record($0).ino }), fd)
    }

    private mutating func quarantineLink(
        _ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, as moved: UnsafePointer<CChar>,
        in trash: FileDescriptor, _ link: PointerLink
    ) -> DeletionOutcome {
        do throws(Errno) { try Syscall.renameNoReplace(at: dirfd, name, to: trash, moved) } catch {
            if Self.renameUnsupported.contains(error) {
                renameRefused = error
                return Self.unlinkInPlace(name, in: dirfd, link)
            }
            return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
        }
        if let refused = Self.recheck(moved, in: trash, link) {
            putBack(moved, from: trash, as: name, in: dirfd)
            return refused == .vanished ? .changed : refused
        }
        do throws(Errno) { try Syscall.unlink(at: trash, moved) } catch {
            putBack(moved, from: trash, as: name, in: dirfd)
            return .failed(error)
        }
        return .removed
    }

    /// The link checked and unlinked where it is (no trash to be had).
    private static func unlinkInPlace(_ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, _ link: PointerLink)
        -> DeletionOutcome
    {
        if let refused = recheck(name, in: dirfd, link) { return refused }
        do throws(Errno) { try Syscall.unlink(at: dirfd, name) } catch {
            return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
        }
        return .removed
    }

    /// Why `name` in `dirfd` is not the link found (nil when it is): `.vanished` when nothing has the name,
    /// `.changed` when something else does, `.failed` when it cannot be looked at.
    static func recheck(_ name: UnsafePointer<CChar>, in dirfd: FileDescriptor, _ link: PointerLink) -> DeletionOutcome?
    {
        switch UnitLinks.link(name, in: dirfd) {
        case .success(let found?): return found.ino == link.ino && found.target == link.target ? nil : .changed
        case .success(nil):
            do throws(Errno) { _ = try Syscall.lstat(at: dirfd, name) } catch {
                return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
            }
            return .changed
        case .failure(let e): return .failed(e)
        }
    }
}
