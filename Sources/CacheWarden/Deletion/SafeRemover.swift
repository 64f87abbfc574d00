import Glibc
import SystemPackage

/// Deletes files inside one registered root without ever following a symlink or leaving the root.
///
/// Paths are never handed to `unlink` as strings built from the root: the root is opened with
/// `O_DIRECTORY | O_NOFOLLOW`, each directory below it is opened relative to its parent the same way and checked
/// against the device and inode the ledger recorded, and the victim is re-checked with
/// `fstatat(…, AT_SYMLINK_NOFOLLOW)` (a regular file with the expected inode) right before `unlinkat`. A directory
/// swapped for a symlink, another mount, or a file replaced since it was counted is refused, not deleted.
/// Directory descriptors are cached for the duration of one trim (`close()` releases them).
struct SafeRemover {
    enum Outcome: Equatable {
        /// Unlinked.
        case removed
        /// Already gone: nothing to delete.
        case vanished
        /// Not what the ledger recorded (another inode, not a regular file, a symlink on the way): left alone.
        case changed
        /// The system refused (permission, read-only filesystem, …).
        case failed(Errno)
    }

    private let ledger: SizeLedger
    private let rootNode: Int32
    private let rootPath: [UInt8]
    private let dev: UInt64
    private var fds: [Int32: Int32] = [:]

    init(ledger: SizeLedger, rootNode: Int32, rootPath: [UInt8], dev: UInt64) {
        self.ledger = ledger
        self.rootNode = rootNode
        self.rootPath = rootPath
        self.dev = dev
    }

    /// A verified descriptor of directory node `n`, opened component by component from the root.
    private mutating func directory(_ n: Int32) throws(Errno) -> Int32 {
        if let fd = fds[n] { return fd }
        var fd: Int32
        var chain = ledger.components(of: n)
        var start = rootNode
        // Reuse the deepest cached ancestor.
        var cachedIndex = -1
        for (i, c) in chain.enumerated().reversed() where fds[c] != nil { cachedIndex = i; break }
        if cachedIndex >= 0 {
            start = chain[cachedIndex]
            fd = fds[start]!
            chain = Array(chain[(cachedIndex + 1)...])
        } else if let rootFD = fds[rootNode] {
            fd = rootFD
        } else {
            fd = try rootPath.withCString { p throws(Errno) in try Syscall.openDirectory(at: AT_FDCWD, p) }
            fds[rootNode] = fd
            try verify(fd, node: rootNode)
        }
        for c in chain {
            let name = ledger.node(c).name
            let child = try name.withCString { p throws(Errno) in try Syscall.openDirectory(at: fd, p) }
            fds[c] = child
            try verify(child, node: c)
            fd = child
        }
        return fd
    }

    private func verify(_ fd: Int32, node: Int32) throws(Errno) {
        let st = try Syscall.fstat(fd)
        guard UInt64(st.st_dev) == dev, UInt64(st.st_ino) == ledger.node(node).ino else { throw Errno.staleNFSFileHandle }
    }

    /// Deletes file record `r` if it is still the regular file with the inode the ledger counted.
    mutating func remove(record r: Int32) -> Outcome {
        let rec = ledger.fileRecord(r)
        do throws(Errno) {
            let dirfd = try directory(rec.dir)
            return try rec.name.withCString { name throws(Errno) -> Outcome in
                let st: stat
                do throws(Errno) { st = try Syscall.lstat(at: dirfd, name) } catch {
                    return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
                }
                guard st.isRegularFile, UInt64(st.st_ino) == rec.ino else { return .changed }
                do throws(Errno) { _ = try Syscall.retrying { unlinkat(dirfd, name, 0) } } catch {
                    return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
                }
                return .removed
            }
        } catch {
            switch error {
            case .staleNFSFileHandle, .tooManySymbolicLinkLevels, .notDirectory: return .changed
            case .noSuchFileOrDirectory: return .vanished
            default: return .failed(error)
            }
        }
    }

    /// Removes directory node `n` if it is empty (never the root); returns whether it was removed.
    mutating func removeEmptyDirectory(_ n: Int32) -> Bool {
        let node = ledger.node(n)
        guard n != rootNode, node.parent >= 0 else { return false }
        guard let parentFD = try? directory(node.parent) else { return false }
        return node.name.withCString { name in
            guard let st = try? Syscall.lstat(at: parentFD, name), st.isDirectory, UInt64(st.st_ino) == node.ino else { return false }
            if let fd = fds.removeValue(forKey: n) { Syscall.close(fd) }
            return unlinkat(parentFD, name, AT_REMOVEDIR) == 0
        }
    }

    /// Closes the cached directory descriptors.
    mutating func close() {
        for fd in fds.values { Syscall.close(fd) }
        fds.removeAll()
    }
}

extension Array where Element == UInt8 {
    /// Calls `body` with the bytes as a NUL-terminated C string.
    func withCString<R, E: Error>(_ body: (UnsafePointer<CChar>) throws(E) -> R) throws(E) -> R {
        var copy = self
        copy.append(0)
        let result: Result<R, E> = copy.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { p in
                do throws(E) { return .success(try body(p)) } catch { return .failure(error) }
            }
        }
        return try result.get()
    }
}
