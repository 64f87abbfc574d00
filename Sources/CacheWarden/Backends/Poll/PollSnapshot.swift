import CacheWardenFilesystem
import Glibc
import SystemPackage

/// What the polling backend keeps of one directory: where it is, and the inode and times it had when it was last
/// read. Taken from the walker's descriptor *before* the entries are read, so any change made after that moves
/// the times this snapshot holds, and the next pass sees it.
struct PollSnapshot: Sendable {
    /// The root (and interval) the directory belongs to.
    var route: WatchRoute
    /// Its absolute path when it was read (`/proc/self/fd`): a directory renamed since is found gone, and its
    /// parent, whose times moved, is re-read and reads it at its new place.
    var path: String
    var ino: UInt64
    var mtime: Int64
    var ctime: Int64
    /// The directory had changed within an interval (plus `PollBackend.timestampSlack`) of being read: read it
    /// again on the next pass even if its times did not move. Files written across a pass get their final size
    /// then, and a change in the same timestamp tick as the read (coarse or skewed clocks) is not missed.
    var unsettled: Bool

    /// The snapshot of the open directory `fd`, whose `fstat` is `st`, at `now` (nanoseconds since 1970 on the
    /// clock file times use).
    init(directory fd: FileDescriptor, status st: stat, route: WatchRoute, now: Int64) throws(Errno) {
        guard let path = Syscall.readLink(fd.procPath), path.hasPrefix("/") else {
            throw Errno.noSuchFileOrDirectory
        }
        self.route = route
        self.path = path
        ino = UInt64(st.st_ino)
        mtime = st.mtimeNanoseconds
        ctime = st.ctimeNanoseconds
        let settledBefore = Nanoseconds.subtracting(
            Nanoseconds.before(now, seconds: route.pollInterval), PollBackend.timestampSlack)
        unsettled = max(mtime, ctime) >= settledBefore
    }

    /// What a pass makes of the directory now: one `lstat` of its path.
    func check() -> PollVerdict {
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(path: path) } catch {
            // Only an answer that says it is not there is gone; a server that does not answer now (EIO, ESTALE,
            // ETIMEDOUT, ENOTCONN) is asked again next pass instead of dropping the whole tree's counts.
            return error == .noSuchFileOrDirectory || error == .notDirectory ? .gone : .unchanged
        }
        guard st.isDirectory, UInt64(st.st_ino) == ino else { return .gone }
        if unsettled || st.mtimeNanoseconds != mtime || st.ctimeNanoseconds != ctime { return .changed }
        return .unchanged
    }
}

/// A pass's verdict on one directory.
enum PollVerdict {
    case unchanged
    /// Its entries may have changed: re-read it.
    case changed
    /// Not at its path any more (deleted, renamed, replaced by another inode).
    case gone
}
