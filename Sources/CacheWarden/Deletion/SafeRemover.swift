import Glibc
import SystemPackage

/// Deletes files inside one registered root without ever following a symlink or leaving the root.
///
/// Paths are never handed to `unlink` as strings built from the root: the root is opened with
/// `O_DIRECTORY | O_NOFOLLOW`, each directory below it is opened relative to its parent the same way and checked
/// against the device and inode the ledger recorded, and the victim is re-checked with
/// `fstatat(…, AT_SYMLINK_NOFOLLOW)` (a regular file with the expected inode) right before `unlinkat`. A directory
/// swapped for a symlink, another mount, or a file replaced since it was counted is refused, not deleted.
/// Directories are opened through `VerifiedDirectories`, cached for one trim (`close()` releases them).
struct SafeRemover {
    enum Outcome: Equatable {
        /// Unlinked.
        case removed
        /// No such name in the verified directory: already gone, nothing to delete.
        case vanished
        /// Not what the ledger recorded (another inode, not a regular file, a symlink on the way): left alone.
        case changed
        /// The system refused (permission, read-only filesystem, …).
        case failed(Errno)
    }

    private let ledger: SizeLedger
    private var directories: VerifiedDirectories
    /// The victim's name with its NUL, reused for every file of the trim (no allocation per file).
    private var scratch: [CChar] = []

    init(ledger: SizeLedger, root: Int32, rootPath: [UInt8]) {
        self.ledger = ledger
        self.directories = VerifiedDirectories(ledger: ledger, root: root, rootPath: rootPath)
    }

    /// Deletes file record `r` if it is still the regular file with the inode the ledger counted.
    mutating func remove(record r: Int32) -> Outcome {
        let rec = ledger.fileRecord(r)
        do throws(Errno) {
            let dirfd = try directories.open(rec.dir)
            scratch.removeAll(keepingCapacity: true)
            for byte in rec.name { scratch.append(CChar(bitPattern: byte)) }
            scratch.append(0)
            return try scratch.withUnsafeBufferPointer { buffer throws(Errno) -> Outcome in
                let name = buffer.baseAddress!
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
            // A directory on the way is gone, renamed, replaced or a symlink: the ledger is behind the disk
            // (its events are still queued). Not "vanished": the file may well exist elsewhere.
            case .staleNFSFileHandle, .tooManySymbolicLinkLevels, .notDirectory, .noSuchFileOrDirectory: return .changed
            default: return .failed(error)
            }
        }
    }

    /// Removes directory node `n` if it is empty (never the root); returns whether it was removed.
    mutating func removeEmptyDirectory(_ n: Int32) -> Bool {
        let node = ledger.node(n)
        guard n != directories.rootNode, node.parent >= 0 else { return false }
        guard let parentFD = try? directories.open(node.parent) else { return false }
        return node.name.withCString { name in
            guard let st = try? Syscall.lstat(at: parentFD, name), st.isDirectory, UInt64(st.st_ino) == node.ino else { return false }
            directories.forget(n)
            return unlinkat(parentFD, name, AT_REMOVEDIR) == 0
        }
    }

    /// Closes the cached directory descriptors.
    mutating func close() { directories.close() }
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
