/// What one stat of a regular file counts (`FileStat.status`): its inode, its bytes under the size basis, its age
/// under the order, its links. The filesystem's side of the ledger's `FileStatus`, which the pipeline makes of it.
package struct CountedStat: Equatable, Sendable {
    package var ino: UInt64
    /// Counted bytes under the size basis.
    package var bytes: Int64
    /// The age key (nanoseconds since 1970) under the order.
    package var age: Int64
    /// `st_nlink`: more than 1 means other names may share these bytes.
    package var links: UInt32

    package init(ino: UInt64, bytes: Int64, age: Int64, links: UInt32) {
        self.ino = ino
        self.bytes = bytes
        self.age = age
        self.links = links
    }
}
