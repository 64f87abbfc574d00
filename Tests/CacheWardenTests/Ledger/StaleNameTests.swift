import Testing
@testable import CacheWardenLedger

/// A re-read (a polling pass, or past the watch limit) finds a file under a new name while its old name, in a
/// directory not re-read yet, is still counted: the ledger names the stale one for a stat, so the total never
/// counts the file twice when policies look at it. No filesystem: the statuses are given.
@Suite struct StaleNameTests {
    @Test func aSecondSingleLinkNameOfAnInodeQueuesTheFirstForAStat() {
        var ledger = SizeLedger()
        let root = ledger.addRoot(RootID(0), path: Array("/cache".utf8), ino: 1, dev: 1, ordered: true)
        func file(_ name: String, ino: UInt64) -> RecordID {
            let r = Array(name.utf8).withUnsafeBytes { ledger.record(in: root, named: $0).record }
            #expect(
                ledger.apply(FileStatus(ino: ino, bytes: 100, age: 1, links: 1), to: r, keepOpenedAge: false).isEmpty,
                "a first stat of a single-link file leaves no other name stale")
            return r
        }
        let old = file("a", ino: 7)
        let other = file("b", ino: 8)
        let moved = file("c", ino: 7) // `a` moved to `c`, seen from `c`'s side first
        #expect(ledger.account(RootID(0))?.total == 300, "counted twice until the stale name is dealt with")
        #expect(ledger.staleName(besides: moved) == old)
        #expect(ledger.staleName(besides: other) == nil) // an inode with one name: nothing to do
    }
}
