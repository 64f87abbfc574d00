import Glibc
import SystemPackage

/// A folder held locks are in (or a pattern was matched in), looked at before the files in it by each re-check
/// (`HeldClientLocks.stillHeld()`):
///
/// - its path from the root must still name the folder held (device and inode; `lstat` of the path against `fstat`
///   of the descriptor): a `.locks/<repo>` folder renamed away and made anew holds the locks the next client takes,
///   and the held descriptor would never show them;
/// - its change and modification times: creating, removing or renaming a name in a folder sets both to the time of
///   the change, so a folder whose times are those it had when every lock in it was last found standing has had no
///   name come or go since, and its files need no `fstatat` and no listing. Times within a second of the look are
///   not trusted (a change in the same clock tick leaves them alike), nor are those of network and FUSE filesystems
///   (another machine's clock, attribute caches).
struct LockFolderWatch {
    struct Stamp: Equatable {
        var mtime: Int64, mtimeNS: Int, ctime: Int64, ctimeNS: Int
        init(_ st: stat) {
            mtime = Int64(st.st_mtim.tv_sec)
            mtimeNS = st.st_mtim.tv_nsec
            ctime = Int64(st.st_ctim.tv_sec)
            ctimeNS = st.st_ctim.tv_nsec
        }
    }

    /// What a look found.
    enum Look {
        /// No name came or went since the last look that found every lock in it standing.
        case quiet
        /// Maybe changed: its files must be looked at; `stamp`, when trusted, is the baseline once they stand.
        case changed(stamp: Stamp?)
        /// Its path names another folder now, or none.
        case moved
    }

    let folder: LockFolder
    private let trusted: Bool
    private var baseline: Stamp?

    init(_ folder: LockFolder) {
        self.folder = folder
        trusted = (try? Syscall.fileSystem(of: folder.fd)).map { !Self.remote.contains($0.magic) } ?? false
    }

    /// NFS, SMB/CIFS (three), FUSE, Ceph, 9P, AFS, Coda, OCFS2, GFS2.
    private static let remote: Set<UInt32> = [0x6969, 0x517B, 0xFF53_4D42, 0xFE53_4D42, 0x6573_5546, 0x00C3_6400, 0x0102_1997,
                                             0x5346_414F, 0x7375_7245, 0x7461_636F, 0x0116_1970]

    func look() -> Look {
        guard let held = try? Syscall.fstat(folder.fd),
              let there = (try? folder.cPath.withUnsafeBufferPointer { p throws(Errno) in try Syscall.lstat(at: AT_FDCWD, p.baseAddress!) }),
              LockFileRegistry.FileIdentity(there) == LockFileRegistry.FileIdentity(held) else { return .moved }
        let stamp = Stamp(held)
        if let baseline, baseline == stamp { return .quiet }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let settled = trusted && Int64(now.tv_sec) - stamp.ctime >= 2   // more than a second before the look
        return .changed(stamp: settled ? stamp : nil)
    }

    /// Every lock in the folder was found standing after a look that gave `stamp`.
    mutating func settle(_ stamp: Stamp?) { baseline = stamp }
}
