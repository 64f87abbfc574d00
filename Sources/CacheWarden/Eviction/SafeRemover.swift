import Glibc
import SystemPackage

/// Deletes files inside one registered root without ever following a symlink or leaving the root.
///
/// Paths are never handed to `unlink` as strings: each directory is opened through `VerifiedDirectories` (from
/// the root down, `O_DIRECTORY | O_NOFOLLOW`, checked against the device and inode the ledger recorded), and the
/// victim is re-checked with `fstatat(…, AT_SYMLINK_NOFOLLOW)` (a regular file with the inode the ledger counted)
/// right before `unlinkat`. A directory swapped for a symlink, another mount, or a file replaced since it was
/// counted is refused, not deleted. Directory descriptors are cached for one trim (`finish()` releases them).
///
/// The re-check is skipped while the backend's `DeletionWitness` vouches that no name in the directory changed
/// since the ledger's last batch: then the ledger's inode for the name is the one on disk, and the witness's check
/// (one system call on an empty queue) sits exactly where the `fstatat` did. In `perf` the `fstatat` was 16.5 % of
/// a trim; in a C probe on tmpfs it added 11–35 % to an `unlinkat`, the witness's check 0–6 %. The trim announces
/// its victims (`expect`), and the witness is prepared for their directories in batches, not one at a time.
struct SafeRemover: FileDeleter {
    private var directories: VerifiedDirectories
    private var witness: (any DeletionWitness)?
    /// The victim's name with its NUL, reused for every file of the trim (no allocation per file).
    private var scratch: [UInt8] = []
    /// The directories of the victims announced by `expect`, in order; those before `nextUpcoming` were handed to
    /// the witness, as were all of `handed`. `lastDirectory` spares the set's hashing while victims come in runs.
    private var upcoming: [NodeID] = []
    private var nextUpcoming = 0
    private var handed: Set<NodeID> = []
    private var lastDirectory: NodeID?
    /// Directories handed to the witness at once.
    static let batchSize = 16

    init(root: RootID, in ledger: SizeLedger, witness: (any DeletionWitness)? = nil) {
        directories = VerifiedDirectories(root: root, in: ledger)
        self.witness = witness
    }

    mutating func delete(_ r: RecordID, in ledger: SizeLedger) -> DeletionOutcome {
        let rec = ledger.record(r)
        do throws(Errno) {
            if rec.dir != lastDirectory {
                lastDirectory = rec.dir
                if witness != nil && !handed.contains(rec.dir) { prepareDirectories(from: rec.dir, ledger) }
            }
            let dirfd = try directories.open(rec.dir, in: ledger)
            scratch.removeAll(keepingCapacity: true)
            ledger.names.withName(rec.name) { scratch.append(contentsOf: $0) }
            scratch.append(0)
            let vouched = witness?.nothingElseChanged(in: rec.dir, fd: dirfd) == true
            let outcome = scratch.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { Self.unlink($0.baseAddress!, in: dirfd, ino: rec.ino, recheck: !vouched) }
            }
            if outcome == .removed { witness?.deleted(nameLength: scratch.count - 1, in: rec.dir) }
            return outcome
        } catch {
            switch error {
            // A directory on the way is gone, renamed, replaced or a symlink: the ledger is behind the disk (its
            // events are still queued). Not "vanished": the file may well exist, elsewhere.
            case .staleNFSFileHandle, .tooManySymbolicLinkLevels, .notDirectory, .noSuchFileOrDirectory: return .changed
            default: return .failed(error)
            }
        }
    }

    mutating func expect(_ victims: [RecordID], in ledger: SizeLedger) {
        guard witness != nil else { return }
        upcoming.removeAll(keepingCapacity: true)
        nextUpcoming = 0
        var last: NodeID?
        for r in victims where ledger.record(r).dir != last {
            last = ledger.record(r).dir
            if let last, !handed.contains(last) { upcoming.append(last) }
        }
    }

    /// Prepares the witness for `dir` and the next announced directories not handed yet, up to `batchSize`, then
    /// commits them together. Each is prepared right after it is opened: a later open can flush the descriptor
    /// cache, and the number of a closed descriptor may then name another directory.
    private mutating func prepareDirectories(from dir: NodeID, _ ledger: SizeLedger) {
        guard var witness else { return }
        self.witness = nil
        defer {
            witness.commitPrepared()
            self.witness = witness
        }
        var next = dir
        for _ in 0..<Self.batchSize {
            handed.insert(next)
            // A directory that does not open is left out: its victim's own `open` will say why.
            if let fd = try? directories.open(next, in: ledger), !witness.prepare(next, fd: fd) { return }
            while nextUpcoming < upcoming.count && handed.contains(upcoming[nextUpcoming]) { nextUpcoming += 1 }
            guard nextUpcoming < upcoming.count else { return }
            next = upcoming[nextUpcoming]
        }
    }

    /// The re-check (unless the witness vouched) and the unlink of one name in a verified directory.
    private static func unlink(_ name: UnsafePointer<CChar>, in dirfd: Int32, ino: UInt64, recheck: Bool) -> DeletionOutcome {
        if recheck {
            let st: stat
            do throws(Errno) { st = try Syscall.lstat(at: dirfd, name) } catch {
                return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
            }
            guard st.isRegularFile, UInt64(st.st_ino) == ino else { return .changed }
        }
        do throws(Errno) { try Syscall.unlink(at: dirfd, name) } catch {
            return error == .noSuchFileOrDirectory ? .vanished : .failed(error)
        }
        return .removed
    }

    mutating func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger) -> Bool {
        guard !ledger.isRoot(n), let parentFD = try? directories.open(ledger.parent(of: n), in: ledger) else { return false }
        let ino = ledger.node(n).ino
        return ledger.name(of: n).withCString { name in
            guard let st = try? Syscall.lstat(at: parentFD, name), st.isDirectory, UInt64(st.st_ino) == ino else { return false }
            directories.forget(n)
            witness?.withdraw()   // a directory's removal queues records the ledger must read
            return (try? Syscall.unlink(at: parentFD, name, directory: true)) != nil
        }
    }

    mutating func finish() {
        directories.close()
        witness = nil   // closes its instance now, not when the trim's value goes
    }
}
