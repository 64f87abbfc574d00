import Glibc
import SystemPackage

/// The client locks taken for one trim of a root, or for one unit: each lock file's descriptor (the lock lasts as
/// long as it is open), the folder it is in and its identity, and the lock files that were not there. Closing the
/// descriptors releases the locks (`release()`, at the latest when this is dropped).
///
/// `stillHeld()` tells whether what was taken still stands: each file taken still at its path (not removed, not
/// replaced by another), and each one that was missing still missing. A lock file removed while held means the
/// next client creates a new one and locks that: the exclusion is gone, so the trim must stop.
final class HeldClientLocks {
    struct Taken {
        let fd: Int32
        let target: LockTarget
        let identity: FileIdentity
    }

    /// A file's device and inode.
    struct FileIdentity: Hashable {
        let dev: UInt64
        let ino: UInt64
        init(_ st: stat) {
            dev = UInt64(st.st_dev)
            ino = UInt64(st.st_ino)
        }
    }

    private(set) var taken: [Taken] = []
    /// Lock files named outright that were not there: a client that starts now creates one and takes it.
    private(set) var absent: [LockTarget] = []
    /// Set once `stillHeld()` found a change: from then on every deletion of the trim is refused.
    private(set) var lost: ClientLockBusy.Why?
    private(set) var lostLock: String?

    var identities: Set<FileIdentity> { Set(taken.map(\.identity)) }
    var isEmpty: Bool { taken.isEmpty && absent.isEmpty }

    func add(_ fd: Int32, _ target: LockTarget, _ identity: FileIdentity) { taken.append(Taken(fd: fd, target: target, identity: identity)) }
    func addAbsent(_ target: LockTarget) { absent.append(target) }

    /// Whether every lock still stands as taken; the first change found is kept (`lost`, `lostLock`) and
    /// reported by every later call without looking again. One `fstatat` per lock file.
    func stillHeld() -> Bool {
        if lost != nil { return false }
        for t in taken where Self.identity(of: t.target) != t.identity {
            lost = .vanished
            lostLock = t.target.display
            return false
        }
        for a in absent where Self.identity(of: a) != nil {
            lost = .vanished
            lostLock = a.display
            return false
        }
        return true
    }

    /// What `stillHeld()` found, as a busy report of `dir`.
    func lostReport(dir: String) -> ClientLockBusy? {
        guard let lost, let lostLock else { return nil }
        return ClientLockBusy(dir: dir, lock: lostLock, why: lost)
    }

    /// The identity of what the target's name shows now (nil: nothing there).
    static func identity(of target: LockTarget) -> FileIdentity? {
        var st = stat()
        let found = target.cName.withUnsafeBufferPointer { name in
            (try? Syscall.retrying { fstatat(target.folder.fd, name.baseAddress!, &st, AT_SYMLINK_NOFOLLOW) }) != nil
        }
        return found ? FileIdentity(st) : nil
    }

    /// Releases every lock (closing the descriptors). Idempotent.
    func release() {
        for t in taken { Syscall.close(t.fd) }
        taken.removeAll()
        absent.removeAll()
    }

    deinit { release() }
}
