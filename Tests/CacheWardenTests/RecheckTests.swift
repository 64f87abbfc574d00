import Glibc
import Synchronization
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenLedger

/// The deleter's re-check of identity and age right before each unlink: it keeps what changed since it was
/// counted, and never keeps a file for ever.
@Suite struct RecheckTests {
    /// Under `order = opened` the age is the last open; a write after it is a use too. An open time behind the
    /// file's mtime (a coarse clock, a write after the open) gives way to the mtime, so the re-check, which
    /// compares the mtime, does not refuse the file at every trim until its next open.
    @Test func anOpenTimeBehindTheFilesMtimeGivesWayToIt() {
        var ledger = SizeLedger()
        let dir = ledger.addRoot(RootID(0), path: Array("/cache".utf8), ino: 1, dev: 1, ordered: true)
        let r = Array("f".utf8).withUnsafeBytes { ledger.record(in: dir, named: $0).record }
        _ = ledger.apply(FileStatus(ino: 2, bytes: 100, age: 1_000, links: 1), to: r, keepOpenedAge: true)
        ledger.markOpened(r, time: 900)
        #expect(ledger.victimAge(r) == 1_000)
        ledger.markOpened(r, time: 2_000)
        #expect(ledger.victimAge(r) == 2_000)
        _ = ledger.apply(FileStatus(ino: 2, bytes: 150, age: 2_500, links: 1), to: r, keepOpenedAge: true)
        #expect(ledger.victimAge(r) == 2_500)
        _ = ledger.apply(FileStatus(ino: 2, bytes: 150, age: 1_500, links: 1), to: r, keepOpenedAge: true)
        #expect(ledger.victimAge(r) == 2_500, "an mtime set back does not make the file older than its last use")
    }

    /// A clear takes everything: a file rewritten as it is cleared goes too (identity is still checked).
    @Test func aClearTakesAFileRewrittenInPlaceAsItIsCleared() throws {
        let tree = TemporaryTree()
        for i in 0..<6 { tree.write("f\(i)", size: 1_000, mtime: 1_000_000 + Double(i)) }
        let path = tree.path
        let h = try WatcherHarness(tree, basis: .apparent) { dir in
            dir.shouldEvict = { candidate in
                if candidate.file == "f3" { Self.rewrite(path + "/f3", size: 2_000) }
                return true
            }
        }
        let report = try h.watcher.clear()
        #expect(report.removed == 6)
        #expect(!tree.exists("f3"))
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A unit (`evict_unit = depth:N`) with a file rewritten since it was counted is kept whole, and the trim
    /// takes the next units: never half a folder.
    @Test func aUnitWithAFileRewrittenSinceItWasCountedStaysWhole() throws {
        let tree = TemporaryTree()
        for job in 0..<4 {
            for f in 0..<2 {
                tree.write("jobs/job\(job)/out\(f)", size: 10_000, mtime: 1_000_000 + Double(job * 10 + f))
            }
        }
        let path = tree.path
        let h = try WatcherHarness(tree, quota: 85_000, basis: .apparent) { dir in
            dir.evictUnit = .depth(2)
            dir.shouldEvict = { candidate in
                if candidate.file == "jobs/job0" { Self.rewrite(path + "/jobs/job0/out1", size: 10_000) }
                return true
            }
        }
        tree.write("jobs/job9/out", size: 10_000) // 90 kB > 85 kB: trim to 42.5 kB
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(h.log.evictions.map(\.file) == ["jobs/job1", "jobs/job2", "jobs/job3"])
        #expect(tree.exists("jobs/job0/out0") && tree.exists("jobs/job0/out1"))
        // The rewritten file was statted again: its new mtime is what the ledger orders it by now.
        var st = stat()
        #expect(lstat(tree.url("jobs/job0/out1"), &st) == 0)
        #expect(eventually { h.watcher.ledgerFiles("cache")["jobs/job0/out1"]?.age == st.mtimeNanoseconds })
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// Under `order = ctime`, deleting one name of a hard-linked file changes the other name's ctime: that name's
    /// age is re-checked by its mtime, which a link or unlink leaves alone, so the trim frees the file's bytes.
    @Test func underCtimeBothNamesOfAHardLinkedFileGo() throws {
        let tree = TemporaryTree()
        tree.write("a-old", size: 10_000)
        #expect(link(tree.url("a-old"), tree.url("a-old-link")) == 0)
        // Created after: newer ctimes, or equal ones (file times come from the kernel's coarse clock), and then the
        // path order, the tie-break, still puts the linked file first.
        for i in 1...5 { tree.write("f\(i)", size: 10_000) }
        // 60 kB counted (the linked file once) in a 50 kB quota: trim to 25 kB.
        let h = try WatcherHarness(tree, quota: 50_000, basis: .apparent) { $0.order = .ctime }
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(!tree.exists("a-old") && !tree.exists("a-old-link"), "evictions: \(h.log.evictions.map(\.file))")
        #expect(h.log.trims.first?.total ?? .max <= 25_000)
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A file moved into the trash that fails its re-check there goes back; when a client renamed a newer file
    /// over its name meanwhile, it goes beside that name. It is never deleted, though the client's own rename would
    /// have replaced it: a deletion is only ever of a checked victim, with an `evict` line.
    @Test func aMovedFileThatFailedItsRecheckIsPutBesideANewerOneNeverDeleted() throws {
        let tree = TemporaryTree()
        tree.write("cache/f", size: 300)
        tree.write("cache/trash/f-1-1", size: 200)
        var st = stat()
        #expect(lstat(tree.url("cache"), &st) == 0)
        var ledger = SizeLedger()
        _ = ledger.addRoot(
            RootID(0), path: Array(tree.url("cache").utf8), ino: UInt64(st.st_ino), dev: UInt64(st.st_dev),
            ordered: false)
        var remover = SafeRemover(root: RootID(0), in: ledger, fileStat: FileStat(basis: .apparent, order: .mtime))
        let parent = try Syscall.openDirectory(path: tree.url("cache"))
        let trash = try Syscall.openDirectory(path: tree.url("cache/trash"))
        "f-1-1".withCString { moved in
            "f".withCString { name in remover.putBack(moved, from: trash.fd, as: name, in: parent.fd) }
        }
        #expect(!tree.exists("cache/trash/f-1-1"))
        #expect(Self.size(tree.url("cache/f")) == 300, "the newer file keeps its name")
        #expect(Self.size(tree.url("cache/f.restored-by-cachewarden-1")) == 200, "the moved file is beside it")
        #expect(remover.trashTrouble == nil)
    }

    static func size(_ path: String) -> Int? {
        var st = stat()
        return lstat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    /// Rewrites a file in place: same inode, new contents and mtime.
    static func rewrite(_ path: String, size: Int) {
        let fd = open(path, O_WRONLY | O_TRUNC)
        _ = [UInt8](repeating: 7, count: size).withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
        close(fd)
    }
}
