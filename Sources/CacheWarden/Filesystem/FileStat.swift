import CWardenShims
import CacheWardenLedger
import Glibc
import SystemPackage

/// How a `stat` of a regular file becomes what the ledger counts: bytes under the size basis, age under the
/// directory's order. The walker and the ledger updater both call this, so a file is counted the same way
/// whichever of them saw it.
struct FileStat: Sendable {
    var basis: SizeBasis
    var order: AgeOrder

    /// The counted view of `st`, the stat of `name` in `dirfd`.
    func status(_ st: stat, dirfd: FileDescriptor, name: UnsafePointer<CChar>?, noBirthTime: inout Bool) -> FileStatus {
        FileStatus(
            ino: UInt64(st.st_ino), bytes: bytes(st),
            age: ageOnDisk(st, dirfd: dirfd, name: name, noBirthTime: &noBirthTime),
            links: UInt32(truncatingIfNeeded: st.st_nlink))
    }

    /// The age key of `st` under the order, as the disk has it (`order = opened` starts from mtime; the ledger
    /// keeps the open time it saw). For `order = btime` the birth time comes from `statx`; where the filesystem
    /// has none, mtime is used and `noBirthTime` is set.
    func ageOnDisk(_ st: stat, dirfd: FileDescriptor, name: UnsafePointer<CChar>?, noBirthTime: inout Bool) -> Int64 {
        switch order {
        case .mtime, .opened: return st.mtimeNanoseconds
        case .atime: return st.atimeNanoseconds
        case .ctime: return st.ctimeNanoseconds
        case .btime:
            var birth: Int64 = 0
            var ino: UInt64 = 0
            guard let name else { noBirthTime = true; return st.mtimeNanoseconds }
            let found = (try? Syscall.retrying { cwsys_birth_time(dirfd.rawValue, name, &birth, &ino) }) ?? -1
            // `statx` looks the name up again: if it found another file than `st`, the name changed in between.
            // Nothing is known of this one's age: newest, so no trim takes it before it is statted again.
            if found >= 0 && ino != UInt64(st.st_ino) { return .max }
            if found == 0 { return birth }
            noBirthTime = true
            return st.mtimeNanoseconds
        }
    }

    /// Counted bytes of a stat under the basis (directories included, for `count_directories`).
    func bytes(_ st: stat) -> Int64 { basis == .allocated ? st.allocatedBytes : Int64(st.st_size) }
}
