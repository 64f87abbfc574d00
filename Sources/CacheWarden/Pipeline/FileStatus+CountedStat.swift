import CacheWardenLedger
import CacheWardenFilesystem

extension FileStatus {
    /// What the ledger counts of a stat the filesystem layer counted (`FileStat.status`): the same four figures.
    init(_ counted: CountedStat) {
        self.init(ino: counted.ino, bytes: counted.bytes, age: counted.age, links: counted.links)
    }
}
