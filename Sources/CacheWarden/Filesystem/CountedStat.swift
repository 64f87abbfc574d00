/// What one stat of a regular file counts (`FileStat.status`): its inode, its bytes under the size basis, its age
/// under the order, its links. The filesystem's side of the ledger's `FileStatus`, which the pipeline makes of it.
struct CountedStat: Equatable, Sendable {
    var ino: UInt64
    /// Counted bytes under the size basis.
    var bytes: Int64
    /// The age key (nanoseconds since 1970) under the order.
    var age: Int64
    /// `st_nlink`: more than 1 means other names may share these bytes.
    var links: UInt32
}
