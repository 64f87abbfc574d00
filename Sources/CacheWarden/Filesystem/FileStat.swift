import CWardenShims
import Glibc

/// How a `stat` of a regular file becomes what the ledger counts: bytes under the size basis, age under the
/// directory's order. The walker and the ledger updater both call this, so a file is counted the same way
/// whichever of them saw it.
struct FileStat: Sendable {
    var basis: SizeBasis
    var order: AgeOrder

    /// The counted view of `st`, the stat of `name` in `dirfd`. For `order = btime` the birth time comes from
    /// `statx`; where the filesystem has none, mtime is used and `noBirthTime` is set.
    func status(_ st: stat, dirfd: Int32, name: UnsafePointer<CChar>?, noBirthTime: inout Bool) -> FileStatus {
        let age: Int64
        switch order {
        case .mtime, .opened: age = st.mtimeNanoseconds
        case .atime: age = st.atimeNanoseconds
        case .ctime: age = st.ctimeNanoseconds
        case .btime:
            var birth: Int64 = 0
            if let name, cwsys_birth_time(dirfd, name, &birth) == 0 {
                age = birth
            } else {
                age = st.mtimeNanoseconds
                noBirthTime = true
            }
        }
        return FileStatus(ino: UInt64(st.st_ino), bytes: bytes(st), age: age,
                          links: UInt32(truncatingIfNeeded: st.st_nlink))
    }

    /// Counted bytes of a stat under the basis (directories included, for `count_directories`).
    func bytes(_ st: stat) -> Int64 { basis == .allocated ? st.allocatedBytes : Int64(st.st_size) }
}
