import CInotify
import Glibc

/// The inotify backend's `DeletionWitness`: right before each deletion it asks the main instance how many bytes
/// of records are queued (`FIONREAD`, one cheap syscall instead of a path lookup) and vouches when that is exactly
/// the trim's own `IN_DELETE` records. Every change to a name in a watched directory queues a record there, in the
/// syscall that made it, so an equal count means no name changed since the ledger's last batch.
///
/// The kernel walks its queue to count, so every `drainEvery` deletions the witness reads its own records out:
/// exactly as many bytes as they take, which are the head of the queue (the count said nothing else was there, and
/// records only join at the tail), so a record that arrives meanwhile stays queued for the next batch. They are
/// checked as they are read; anything unexpected (it cannot happen by the kernel's rules) is treated like a
/// queue overflow: the backend's next batch starts with one and the trees are rescanned.
///
/// Only made for filesystems whose every change passes through this kernel (`InotifyBackend.deletionWitness`):
/// on NFS, SMB or FUSE another machine's rename queues nothing here.
struct InotifyDeletionWitness: DeletionWitness {
    static let drainEvery = 32

    private let inotify: InotifyDescriptor
    /// Whether the backend watches a directory (changes in one it does not watch queue nothing).
    private let isWatched: (NodeID) -> Bool
    /// Tells the backend its queue lost records (it rescans).
    private let recordsLost: () -> Void
    /// Bytes and records of this trim's own deletions still queued.
    private var ownBytes = 0
    private var ownRecords = 0
    private var vouching = true

    init(inotify: InotifyDescriptor, isWatched: @escaping (NodeID) -> Bool, recordsLost: @escaping () -> Void) {
        self.inotify = inotify
        self.isWatched = isWatched
        self.recordsLost = recordsLost
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

    /// Reads exactly this trim's own records; false (and the backend told to rescan) if they were not.
    private mutating func drainOwnRecords() -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ownBytes, alignment: 8)
        defer { buffer.deallocate() }
        let read = (try? inotify.read(into: buffer)) ?? -1
        var deletions = 0
        if read > 0 {
            InotifyRecords.forEach(in: UnsafeRawBufferPointer(rebasing: buffer[0..<read])) { r in
                if r.mask == CINOTIFY_IN_DELETE { deletions += 1 }
            }
        }
        guard read == ownBytes, deletions == ownRecords else {
            recordsLost()
            return false
        }
        ownBytes = 0
        ownRecords = 0
        return true
    }
}
