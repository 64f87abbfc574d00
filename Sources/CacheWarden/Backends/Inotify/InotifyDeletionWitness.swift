import CInotify
import Glibc

/// The inotify backend's `DeletionWitness`: right before each deletion it asks the main instance how many bytes
/// of records are queued (`FIONREAD`, one cheap syscall instead of a path lookup) and vouches when that is exactly
/// the trim's own `IN_DELETE` records. Every change to a name in a watched directory queues a record there, in the
/// syscall that made it, so an equal count means no name changed since the ledger's last batch.
///
/// The kernel walks its queue to count, so every `drainEvery` deletions the witness reads its own records out:
/// exactly as many bytes as they take, which are the head of the queue (the count said nothing else was there, and
/// records only join at the tail), so a record that arrives meanwhile stays queued. What it reads goes to the
/// backend (`keep`), whose next batch starts with it: the ledger sees the trim's own deletions as it would have
/// without the witness (a counted folder is re-statted for them). Were they not exactly the trim's own records
/// (the kernel's rules say they are), nothing is lost either; the witness only stops vouching.
///
/// Only made for filesystems whose every change passes through this kernel (`InotifyBackend.deletionWitness`):
/// on NFS, SMB or FUSE another machine's rename queues nothing here.
struct InotifyDeletionWitness: DeletionWitness {
    static let drainEvery = 32

    private let inotify: InotifyDescriptor
    /// Whether the backend watches a directory (changes in one it does not watch queue nothing).
    private let isWatched: (NodeID) -> Bool
    /// Hands records read out of the queue to the backend, for its next batch.
    private let keep: (UnsafeRawBufferPointer) -> Void
    /// Bytes and records of this trim's own deletions still queued.
    private var ownBytes = 0
    private var ownRecords = 0
    private var vouching = true

    init(inotify: InotifyDescriptor, isWatched: @escaping (NodeID) -> Bool,
         keep: @escaping (UnsafeRawBufferPointer) -> Void) {
        self.inotify = inotify
        self.isWatched = isWatched
        self.keep = keep
    }

    mutating func nothingElseChanged(in dir: NodeID) -> Bool {
        guard vouching, isWatched(dir), inotify.pendingBytes() == ownBytes else {
            vouching = false
            return false
        }
        if ownRecords >= Self.drainEvery { vouching = drainOwnRecords() }
        return vouching
    }

    mutating func deleted(nameLength: Int) {
        ownBytes += Self.recordSize(nameLength: nameLength)
        ownRecords += 1
    }

    mutating func withdraw() { vouching = false }

    /// The size of the `IN_DELETE` record of a name: the header, then the name, NUL-terminated and padded to a
    /// multiple of the header's size (`round_event_name_len` in fs/notify/inotify/inotify_user.c).
    static func recordSize(nameLength: Int) -> Int {
        let header = Int(CINOTIFY_EVENT_HEADER_SIZE)
        return header + (nameLength + 1 + header - 1) / header * header
    }

    /// Reads this trim's own records out and hands them to the backend; false if they were not exactly those.
    private mutating func drainOwnRecords() -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ownBytes, alignment: 8)
        defer { buffer.deallocate() }
        guard let read = try? inotify.read(into: buffer), read > 0 else { return false }
        let records = UnsafeRawBufferPointer(rebasing: buffer[0..<read])
        keep(records)
        var deletions = 0
        InotifyRecords.forEach(in: records) { if $0.mask == CINOTIFY_IN_DELETE { deletions += 1 } }
        guard read == ownBytes, deletions == ownRecords else { return false }
        ownBytes = 0
        ownRecords = 0
        return true
    }
}
