import CInotify
import Glibc

/// The inotify backend's `DeletionWitness`.
///
/// Before a trim deletes in a directory, the witness puts a watch on it in an instance of its own, the
/// `InotifySentry` (`IN_CREATE`, `IN_MOVED_TO`), and then makes sure the ledger knew every name there at that
/// moment: the backend's queue holds nothing but the trim's own `IN_DELETE` records (one `FIONREAD`), or, if it
/// holds more, the witness reads all of it and finds no `IN_CREATE` or `IN_MOVED_TO` for that directory — the only
/// two changes that make a name stand for another file (a size change or a removal does not: the ledger's inode for
/// the name stays the one on disk, or the name is gone and `unlinkat` says so). From the watch on, the sentry sees
/// every such change. Right before each deletion the witness asks the sentry (one system call on a queue that stays
/// empty while nothing happens) and vouches while it is empty; when it is not, the witness reads it out and stops
/// vouching for the directories it names. The backend's queue is looked at once per batch of
/// directories (`prepare`, `commitPrepared`: the deleter prepares the directories of its next victims together),
/// not per file: the kernel walks it to count, and it grows by one record per deletion.
///
/// What it reads out of the backend's queue — at a new directory, and every `drainEvery` deletions so that a long
/// trim never fills the kernel's queue — goes to the backend (`keep`), whose next batch starts with it: the ledger
/// sees every record, in order, as it would have without the witness.
///
/// Only made for filesystems whose every change passes through this kernel (`InotifyBackend.deletionWitness`):
/// on NFS, SMB or FUSE another machine's rename queues nothing here.
struct InotifyDeletionWitness: DeletionWitness {
    /// Held by the one witness a backend has out at a time: two at once (a group trim takes turns between its
    /// members' trims) would each read records out of the queue the other needs to see.
    final class Lease {}

    let lease = Lease()
    private let inotify: InotifyDescriptor
    /// The backend's watch descriptor of a directory; nil if it does not watch it (changes there queue nothing).
    private let watchDescriptor: (NodeID) -> Int32?
    /// Hands records read out of the backend's queue to the backend, for its next batch.
    private let keep: (UnsafeRawBufferPointer) -> Void
    /// The own records that may queue before they are read out (a quarter of the kernel's queue at most).
    let drainEvery: Int
    /// Made at the first directory (a trim that deletes nothing makes no instance).
    private(set) var sentry: InotifySentry?
    /// The directory of the last victim vouched for (victims come in runs from one directory).
    private var lastGuarded: NodeID?
    /// Bytes and records of this trim's own deletions queued at the backend since the witness last read it.
    private var ownBytes = 0
    private var ownRecords = 0
    /// Directories vouched for so far, and those that cannot be in this trim.
    private var guarded: Set<NodeID> = []
    private var refused: Set<NodeID> = []
    /// Watches whose directory had a name created or renamed over in what the witness read: never vouched for.
    private var changedWatches: Set<Int32> = []
    /// The directory of each of the sentry's watches.
    private var sentryWatches: [Int32: NodeID] = [:]
    /// Watched on the sentry, not yet checked against the backend's queue (see `commitPrepared`).
    private var prepared: [(dir: NodeID, wd: Int32)] = []
    private var vouching = true

    /// `unread` is what the backend holds from earlier reads and has not translated yet (the ledger does not know
    /// it either).
    init(inotify: InotifyDescriptor, watchDescriptor: @escaping (NodeID) -> Int32?,
         keep: @escaping (UnsafeRawBufferPointer) -> Void, unread: UnsafeRawBufferPointer = .init(start: nil, count: 0),
         drainEvery: Int = min(2048, max(16, (InotifyDescriptor.maxQueuedEvents ?? 16_384) / 4))) {
        self.inotify = inotify
        self.watchDescriptor = watchDescriptor
        self.keep = keep
        self.drainEvery = drainEvery
        note(unread)
    }

    mutating func nothingElseChanged(in dir: NodeID, fd: Int32) -> Bool {
        guard vouching else { return false }
        if lastGuarded != dir {
            guard guarded.contains(dir) || (!refused.contains(dir) && guardDirectory(dir, fd: fd)) else { return false }
            lastGuarded = dir
        }
        return sentry?.isQuiet == true || quietAgain(for: dir)
    }

    /// The sentry saw a change: the directories it names are refused from now on (their victims are re-checked),
    /// the others stay vouched for — a client writing into one directory of the cache does not slow the trim's
    /// deletions in all the others. Whether `dir` is still vouched for once everything queued was looked at.
    private mutating func quietAgain(for dir: NodeID) -> Bool {
        // A client changing names faster than they are read out here: vouch for nothing more.
        for _ in 0..<4 {
            guard let sentry, let changed = sentry.takeChanges() else { break }
            for wd in changed {
                guard let changedDir = sentryWatches[wd] else { vouching = false; return false }
                guarded.remove(changedDir)
                refused.insert(changedDir)
            }
            if refused.contains(dir) {
                lastGuarded = nil
                return false
            }
            if sentry.isQuiet { return true }
        }
        vouching = false
        return false
    }

    mutating func deleted(nameLength: Int, in dir: NodeID) {
        // Each deletion in a watched directory queues one record at the backend, vouched for or not; they are read
        // out even once the witness stopped vouching, so that a long trim never overflows the queue.
        guard dir == lastGuarded || watchDescriptor(dir) != nil else { return }
        ownBytes += Self.recordSize(nameLength: nameLength)
        ownRecords += 1
        if ownRecords >= drainEvery { readBackendQueue(atLeast: ownBytes) }
    }

    mutating func withdraw() { vouching = false }

    /// The size of the `IN_DELETE` record of a name: the header, then the name, NUL-terminated and padded to a
    /// multiple of the header's size (`round_event_name_len` in fs/notify/inotify/inotify_user.c).
    static func recordSize(nameLength: Int) -> Int {
        let header = Int(CINOTIFY_EVENT_HEADER_SIZE)
        return header + (nameLength + 1 + header - 1) / header * header
    }

    /// Guards `dir` alone (a victim's directory nobody prepared). False, and never asked again, if it cannot be
    /// vouched for.
    private mutating func guardDirectory(_ dir: NodeID, fd: Int32) -> Bool {
        _ = prepare(dir, fd: fd)
        commitPrepared()
        return guarded.contains(dir)
    }

    /// Watches `dir` on the sentry now, through `fd` at once (a descriptor is only sure to be that directory's
    /// while the caller holds it); `commitPrepared` then checks the backend's queue once for every directory
    /// prepared since the last commit.
    mutating func prepare(_ dir: NodeID, fd: Int32) -> Bool {
        guard vouching else { return false }
        guard !guarded.contains(dir), !refused.contains(dir), !prepared.contains(where: { $0.dir == dir }) else { return true }
        if sentry == nil { sentry = try? InotifySentry() }
        // A case-folding directory: a name the ledger knows can reach a file created under another spelling.
        // (A watch the sentry has already names another node for this directory's inode: left to the re-check.)
        if let wd = watchDescriptor(dir), (try? Syscall.isCaseFolded(fd)) == false, let sentry,
           let sentryWatch = sentry.watch(fd), sentryWatches[sentryWatch] == nil {
            prepared.append((dir, wd))
            sentryWatches[sentryWatch] = dir
        } else {
            refused.insert(dir)
        }
        return true
    }

    /// One look at the backend's queue for all directories prepared since the last commit (after their watches,
    /// so that no change falls between the two), not one each: the kernel walks the whole queue to count it, and
    /// the trim's own records lengthen it. A directory with a new name in what it holds is refused.
    mutating func commitPrepared() {
        guard !prepared.isEmpty else { return }
        defer { prepared.removeAll() }
        if let pending = inotify.pendingBytes() {
            if pending != ownBytes { readBackendQueue(atLeast: pending) }
        } else {
            vouching = false
        }
        for (dir, wd) in prepared {
            if vouching && !changedWatches.contains(wd) { guarded.insert(dir) } else { refused.insert(dir) }
        }
    }

    /// Reads the backend's queue (at least `atLeast` bytes, unless it empties first), hands what it read over, and
    /// notes the watches where a name was created or renamed over. An overflow (records lost) ends the vouching.
    private mutating func readBackendQueue(atLeast: Int) {
        let inotify = inotify, keep = keep
        let consumed = inotify.readQueued(atLeast: atLeast) { records in
            keep(records)
            note(records)
        }
        if (consumed ?? 0) < atLeast { vouching = false }   // what was not read was not looked at
        ownBytes = 0
        ownRecords = 0
    }

    /// Notes the watches where `records` create a name or rename over one; an overflow ends the vouching.
    private mutating func note(_ records: UnsafeRawBufferPointer) {
        InotifyRecords.forEach(in: records) { r in
            if InotifyRecords.isOverflow(r) { vouching = false }
            if r.has(CINOTIFY_IN_CREATE | CINOTIFY_IN_MOVED_TO) { changedWatches.insert(r.wd) }
        }
    }
}
