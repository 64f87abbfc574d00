import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Opens the directories of one root the only safe way: from the root down, one component at a time, each with
/// `openat2(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_NO_XDEV)` and checked against the device
/// and inode the ledger recorded. A path string is never resolved by the kernel, so a directory swapped for a
/// symlink (or another mount, a bind mount even of the same filesystem, or a different directory under the old
/// name) is refused instead of followed. Scans, stats and deletions all go through here. The descriptors are
/// `O_PATH` ones (see `Syscall.openDirectoryPath`); what lists a directory reopens it
/// (`Syscall.reopenForListing`). Descriptors are cached (bounded) until `close()`; each is an `OwnedDescriptor`,
/// so a cache dropped without `close()` still closes every one of them, once.
struct VerifiedDirectories {
    let root: RootID
    let rootNode: NodeID
    private let rootPath: String
    private let dev: UInt64
    private var fds: [NodeID: OwnedDescriptor] = [:]
    /// The last directory asked for: a trim's victims come in runs from one directory, and this spares the
    /// dictionary's hashing for each.
    private var last: (node: NodeID, fd: FileDescriptor)?
    static let maxCached = 256

    /// Whether a mount placed over a folder of the tree is crossed (a bind mount of the root's own filesystem,
    /// which `one_file_system = false` counts). Never for a deletion.
    private let crossingMounts: Bool

    /// Directories of `root`, which the ledger must know; `crossingMounts` for reading, never for deleting.
    init(root: RootID, in ledger: SizeLedger, crossingMounts: Bool = false) {
        self.crossingMounts = crossingMounts
        let account = ledger.account(root)!
        self.root = root
        self.rootNode = account.rootNode
        self.rootPath = PathBytes.display(account.path)
        self.dev = account.dev
    }

    /// A verified descriptor of directory `n`, borrowed from this cache: valid until the next `open`, `forget` or
    /// `close` (an `open` that misses the cache may flush it, all of it when it is full). A node the ledger no
    /// longer has (its folder was removed, or moved out of the tree) is refused with `ENOENT`: it has no way down
    /// from the root, and must never be taken for the root itself.
    mutating func open(_ n: NodeID, in ledger: SizeLedger) throws(Errno) -> FileDescriptor {
        guard ledger.isLive(n), ledger.root(of: n) == root else { throw Errno.noSuchFileOrDirectory }
        if let last, last.node == n { return last.fd }
        let fd = try lookUp(n, in: ledger)
        last = (n, fd)
        return fd
    }

    private mutating func lookUp(_ n: NodeID, in ledger: SizeLedger) throws(Errno) -> FileDescriptor {
        if let owned = fds[n] { return owned.fd }
        if fds.count >= Self.maxCached { close() }
        var chain = ledger.chain(of: n)
        var fd: FileDescriptor
        if let i = chain.lastIndex(where: { fds[$0] != nil }), let cached = fds[chain[i]] {
            fd = cached.fd
            chain.removeFirst(i + 1)
        } else if let root = fds[rootNode] {
            fd = root.fd
        } else {
            fd = try adopt(try Syscall.openRoot(path: rootPath), as: rootNode, ino: ledger.node(rootNode).ino)
        }
        for c in chain {
            let crossing = crossingMounts
            let child = try ledger.name(of: c).withCString { p throws(Errno) in
                try Self.openChild(at: fd, p, crossingMounts: crossing)
            }
            fd = try adopt(child, as: c, ino: ledger.node(c).ino)
        }
        return fd
    }

    /// A directory below the root: never through a symlink, and (unless `crossingMounts`) never into another
    /// mount, even one of the same filesystem (`RESOLVE_NO_XDEV`; a mount point fails with `EXDEV`): a bind mount
    /// placed over a folder of the tree after it was read cannot lead a deletion outside. Without `openat2`, the
    /// device and mount ID compared with the parent's (`Syscall.openDirectoryNotCrossing`), then `adopt`'s check.
    private static func openChild(at fd: FileDescriptor, _ name: UnsafePointer<CChar>, crossingMounts: Bool)
        throws(Errno) -> OwnedDescriptor
    {
        if crossingMounts { return try Syscall.openDirectoryPath(at: fd, name) }
        return try Syscall.openDirectoryNotCrossing(at: fd, name, pathOnly: true)
    }

    /// Caches `owned` for node `n` if it is the directory the ledger recorded (and returns it, borrowed); throws
    /// otherwise, and the descriptor closes as its owner goes.
    private mutating func adopt(_ owned: OwnedDescriptor, as n: NodeID, ino: UInt64) throws(Errno) -> FileDescriptor {
        let st = try Syscall.fstat(owned.fd)
        guard UInt64(st.st_dev) == dev, UInt64(st.st_ino) == ino else { throw Errno.staleNFSFileHandle }
        fds[n] = owned
        return owned.fd
    }

    /// Drops the cached descriptor of node `n` (after the directory was removed).
    mutating func forget(_ n: NodeID) {
        last = nil
        fds[n] = nil
    }

    /// Releases every cached descriptor (each closes as its owner goes).
    mutating func close() {
        last = nil
        fds.removeAll()
    }
}
