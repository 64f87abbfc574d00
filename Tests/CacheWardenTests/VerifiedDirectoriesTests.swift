import CInotify
import Glibc
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenLedger

/// The verified directories that stats and deletions go through: `O_PATH` descriptors, opened from the root down
/// and checked against the ledger, which the watcher's own opens instance does not hear about.
@Suite struct VerifiedDirectoriesTests {
    /// Whether this kernel keeps `O_PATH` opens out of fsnotify (Linux 6.10 and later; before, they were reported
    /// as any other open).
    static let pathOpensAreSilent: Bool = {
        let tree = TemporaryTree()
        guard let inotify = try? InotifyDescriptor(), let fd = try? Syscall.openDirectory(path: tree.path) else {
            return false
        }
        guard (try? inotify.addWatch(directory: fd.fd, mask: CINOTIFY_IN_OPEN | CINOTIFY_IN_CLOSE_NOWRITE)) != nil,
            // Opened and closed at once: the owner is not kept.
            (try? Syscall.openDirectoryPath(path: tree.path)) != nil
        else { return false }
        var p = pollfd(fd: inotify.fd.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }()

    /// A ledger knowing `tree` as root 0 and `a`, `a/b` below it, with their real inodes.
    private func ledger(_ tree: TemporaryTree) throws -> (SizeLedger, a: NodeID, b: NodeID) {
        var ledger = SizeLedger()
        let (st, aIno, bIno) = (
            try Syscall.lstat(path: tree.path), try Syscall.lstat(path: tree.url("a")).st_ino,
            try Syscall.lstat(path: tree.url("a/b")).st_ino
        )
        let root = ledger.addRoot(
            RootID(0), path: Array(tree.path.utf8), ino: UInt64(st.st_ino), dev: UInt64(st.st_dev))
        let a = Array("a".utf8).withUnsafeBytes { ledger.addDirectory(parent: root, name: $0, ino: UInt64(aIno)).node }
        let b = Array("b".utf8).withUnsafeBytes { ledger.addDirectory(parent: a, name: $0, ino: UInt64(bIno)).node }
        return (ledger, a, b)
    }

    /// Bytes of records queued on `inotify` (it is non-blocking: 0 when none).
    private func queued(_ inotify: InotifyDescriptor) throws -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        var total = 0
        while case let n = try inotify.read(into: buffer), n > 0 { total += n }
        return total
    }

    /// Before, a stat opened each directory on the way for reading, which queued an `IN_OPEN` record on the
    /// watcher's opens instance and woke it for a second batch after every file it statted.
    @Test(.enabled(if: Self.pathOpensAreSilent, "this kernel (before 6.10) reports O_PATH opens to inotify"))
    func statsAndUnlinksThroughThemQueueNoOpenRecord() throws {
        let tree = TemporaryTree()
        tree.write("a/b/f", size: 100)
        tree.write("a/b/g", size: 100)
        let (ledger, _, b) = try ledger(tree)
        let opens = try InotifyDescriptor()
        for path in [tree.path, tree.url("a"), tree.url("a/b")] {
            let fd = try Syscall.openDirectory(path: path)
            _ = try opens.addWatch(directory: fd.fd, mask: CINOTIFY_IN_OPEN | CINOTIFY_IN_CLOSE_NOWRITE)
        }
        #expect(try queued(opens) > 0, "the watches' own opens are heard")

        var directories = VerifiedDirectories(root: RootID(0), in: ledger)
        let fd = try directories.open(b, in: ledger)
        #expect(try Syscall.lstat(at: fd, "f").st_size == 100)
        try Syscall.unlink(at: fd, "g")
        directories.close()
        #expect(try queued(opens) == 0)
        #expect(tree.exists("a/b/f") && !tree.exists("a/b/g"))

        // A listing reopens the directory for reading: that open is heard, so the silence above is not deafness.
        directories = VerifiedDirectories(root: RootID(0), in: ledger)
        let listing = try Syscall.reopenForListing(try directories.open(b, in: ledger))
        var names: [String] = []
        try Syscall.readDirectory(listing.fd) { names.append(String(cString: $0.name)) }
        directories.close()
        #expect(names.filter { $0 != "." && $0 != ".." } == ["f"])
        #expect(try queued(opens) > 0)
    }

    /// A directory on the way replaced by a symlink (to a directory) is refused, not followed; one replaced by
    /// another directory is refused by its inode.
    @Test func aSymlinkOrAnotherDirectoryOnTheWayIsRefused() throws {
        let tree = TemporaryTree()
        tree.write("a/b/f", size: 100)
        tree.write("elsewhere/b/f", size: 100)
        let (ledger, _, b) = try ledger(tree)
        #expect(Glibc.rename(tree.url("a"), tree.url("a-old")) == 0)
        #expect(symlink(tree.url("elsewhere"), tree.url("a")) == 0)
        var directories = VerifiedDirectories(root: RootID(0), in: ledger)
        #expect(throws: Errno.notDirectory) { try directories.open(b, in: ledger) }
        directories.close()

        #expect(unlink(tree.url("a")) == 0)
        #expect(Glibc.rename(tree.url("elsewhere"), tree.url("a")) == 0)
        #expect(throws: Errno.staleNFSFileHandle) { try directories.open(b, in: ledger) }
        directories.close()
        #expect(tree.exists("a/b/f") && tree.exists("a-old/b/f"))
    }

    /// A node the ledger no longer has is refused, never taken for the root (its chain up is empty).
    @Test func aNodeRemovedFromTheLedgerIsRefused() throws {
        let tree = TemporaryTree()
        tree.write("a/b/f", size: 100)
        var (ledger, _, b) = try ledger(tree)
        var directories = VerifiedDirectories(root: RootID(0), in: ledger)
        _ = try directories.open(b, in: ledger)
        _ = ledger.removeSubtree(b)
        directories.forget(b)
        #expect(throws: Errno.noSuchFileOrDirectory) { try directories.open(b, in: ledger) }
        directories.close()
    }
}
