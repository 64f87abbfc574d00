import CWardenShims
import Glibc
import SystemPackage

/// How a `stat` of a regular file is counted: bytes under the basis, age from one of its times. The walker and the
/// ledger updater both call this, so a file is counted the same way whichever of them saw it. In the filesystem's
/// own words: the settings' size basis and age order become these where a root is registered (`RootRuntime`).
package struct FileStat: Sendable {
    /// Which bytes a file counts: its allocated blocks (`st_blocks × 512`, as `du`) or its length (`st_size`).
    package enum Basis: Sendable {
        case allocated, apparent
    }

    /// Which of a file's times is its age. `btime` is the birth time from `statx`, or mtime where the filesystem
    /// has none.
    package enum Order: Sendable {
        case mtime, atime, ctime, btime
    }

    package var basis: Basis
    package var order: Order

    package init(basis: Basis, order: Order) {
        self.basis = basis
        self.order = order
    }

    /// The counted view of `st`, the stat of `name` in `dirfd`.
    package func status(_ st: stat, dirfd: FileDescriptor, name: UnsafePointer<CChar>?, noBirthTime: inout Bool)
        -> CountedStat
    {
        CountedStat(
            ino: UInt64(st.st_ino), bytes: bytes(st),
            age: ageOnDisk(st, dirfd: dirfd, name: name, noBirthTime: &noBirthTime),
            links: UInt32(truncatingIfNeeded: st.st_nlink))
    }

    /// The age key of `st` under the order, as the disk has it. For `order = btime` the birth time comes from
    /// `statx`; where the filesystem has none, mtime is used and `noBirthTime` is set.
    package func ageOnDisk(_ st: stat, dirfd: FileDescriptor, name: UnsafePointer<CChar>?, noBirthTime: inout Bool)
        -> Int64
    {
        switch order {
        case .mtime: return st.mtimeNanoseconds
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
    package func bytes(_ st: stat) -> Int64 { basis == .allocated ? st.allocatedBytes : Int64(st.st_size) }
}
