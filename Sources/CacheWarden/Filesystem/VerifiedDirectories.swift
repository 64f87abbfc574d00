import Glibc
import SystemPackage

/// Opens the directories of one root the only safe way: from the root down, one component at a time, each with
/// `openat(parent, name, O_DIRECTORY | O_NOFOLLOW)` and checked against the device and inode the ledger
/// recorded. A path string is never resolved by the kernel, so a directory swapped for a symlink (or another
/// mount, or a different directory under the old name) is refused instead of followed. Scans, stats and
/// deletions all go through here. Descriptors are cached (bounded) until `close()`.
struct VerifiedDirectories {
    let root: RootID
    let rootNode: NodeID
    private let rootPath: String
    private let dev: UInt64
    private var fds: [NodeID: Int32] = [:]
    /// The last directory asked for: a trim's victims come in runs from one directory, and this spares the
    /// dictionary's hashing for each.
    private var last: (node: NodeID, fd: Int32)?
    static let maxCached = 256

    /// Directories of `root`, which the ledger must know.
    init(root: RootID, in ledger: SizeLedger) {
        let account = ledger.account(root)!
        self.root = root
        self.rootNode = account.rootNode
        self.rootPath = PathBytes.display(account.path)
        self.dev = account.dev
    }

    /// A verified descriptor of directory `n` (owned by this cache: do not close it).
    mutating func open(_ n: NodeID, in ledger: SizeLedger) throws(Errno) -> Int32 {
        if let last, last.node == n { return last.fd }
        let fd = try lookUp(n, in: ledger)
        last = (n, fd)
        return fd
    }

    private mutating func lookUp(_ n: NodeID, in ledger: SizeLedger) throws(Errno) -> Int32 {
        if let fd = fds[n] { return fd }
        if fds.count >= Self.maxCached { close() }
        var chain = ledger.chain(of: n)
        var fd: Int32
        if let i = chain.lastIndex(where: { fds[$0] != nil }), let cached = fds[chain[i]] {
            fd = cached
            chain.removeFirst(i + 1)
        } else if let rootFD = fds[rootNode] {
            fd = rootFD
        } else {
            fd = try Syscall.openDirectory(path: rootPath)
            try adopt(fd, as: rootNode, ino: ledger.node(rootNode).ino)
        }
        for c in chain {
            let child = try ledger.name(of: c).withCString { p throws(Errno) in try Syscall.openDirectory(at: fd, p) }
            try adopt(child, as: c, ino: ledger.node(c).ino)
            fd = child
        }
        return fd
    }

    /// Caches `fd` for node `n` if it is the directory the ledger recorded; closes it and throws otherwise.
    private mutating func adopt(_ fd: Int32, as n: NodeID, ino: UInt64) throws(Errno) {
        let st: stat
        do throws(Errno) { st = try Syscall.fstat(fd) } catch { Syscall.close(fd); throw error }
        guard UInt64(st.st_dev) == dev, UInt64(st.st_ino) == ino else {
            Syscall.close(fd)
            throw Errno.staleNFSFileHandle
        }
        fds[n] = fd
    }

    /// Drops the cached descriptor of node `n` (after the directory was removed).
    mutating func forget(_ n: NodeID) {
        last = nil
        if let fd = fds.removeValue(forKey: n) { Syscall.close(fd) }
    }

    mutating func close() {
        last = nil
        for fd in fds.values { Syscall.close(fd) }
        fds.removeAll()
    }
}
