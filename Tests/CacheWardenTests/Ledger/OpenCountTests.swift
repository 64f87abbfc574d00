import Testing
@testable import CacheWardenLedger

/// The ledger's open counts without a filesystem, driven in the orders the two inotify instances can deliver in:
/// opens and closes are read apart from the creates and renames, so a close can arrive under the name the file had
/// at close time, or after the rename of the name it was opened by. A file must never stay "open" once every
/// open has been closed (it would be spared from trims for ever), whichever order the events came in.
@Suite struct OpenCountTests {
    struct Fixture {
        var ledger = SizeLedger()
        let dir: NodeID

        init() {
            dir = ledger.addRoot(RootID(0), path: Array("/cache".utf8), ino: 1, dev: 1, ordered: true)
        }

        mutating func create(_ name: String, ino: UInt64) -> RecordID {
            let r = Array(name.utf8).withUnsafeBytes { ledger.record(in: dir, named: $0).record }
            _ = ledger.apply(FileStatus(ino: ino, bytes: 100, age: 1, links: 1), to: r, keepOpenedAge: false)
            return r
        }

        mutating func rename(_ r: RecordID, to name: String) {
            if let old = current(name) { _ = ledger.removeRecord(old) }
            ledger.detachRecord(r)
            _ = Array(name.utf8).withUnsafeBytes { ledger.attachRecord(r, dir: dir, name: $0) }
        }

        func current(_ name: String) -> RecordID? {
            Array(name.utf8).withUnsafeBytes { ledger.existingRecord(in: dir, named: $0) }
        }

        func key(_ name: String) -> OpenName { OpenName(dir: dir, name: Array(name.utf8)) }
        mutating func open(_ name: String) { if let r = current(name) { ledger.noteOpened(r, as: key(name)) } }
        mutating func close(_ name: String) { ledger.noteClosed(key(name), current: current(name)) }
    }

    @Test func aCloseUnderTheNameAfterARenameEndsTheOpen() {
        var f = Fixture()
        let r = f.create("x.tmp", ino: 2)
        f.open("x.tmp")
        f.rename(r, to: "x")
        #expect(f.ledger.isOpen(r))
        f.close("x") // the kernel names the entry as it is at close time
        #expect(!f.ledger.isOpen(r))
        #expect(f.ledger.openedAs.isEmpty)
    }

    @Test func aCloseReadAfterTheRenameOfItsNameStillEndsTheOpen() {
        var f = Fixture()
        let r = f.create("x.tmp", ino: 2)
        f.open("x.tmp")
        // close(x.tmp) happened before rename(x.tmp → x), but the rename was applied first.
        f.rename(r, to: "x")
        f.close("x.tmp")
        #expect(!f.ledger.isOpen(r))
    }

    @Test func aCloseAheadOfItsRenameMatchesNothingUntilTheRenameIsApplied() {
        var f = Fixture()
        let r = f.create("x.tmp", ino: 2)
        f.open("x.tmp")
        // open(x.tmp), rename(x.tmp → x), close(x): the close is read before the main instance's rename.
        let early = f.ledger.noteClosed(f.key("x"), current: f.current("x"))
        #expect(!early, "nothing is named x yet")
        #expect(f.ledger.isOpen(r))
        f.rename(r, to: "x")
        let retried = f.ledger.noteClosed(f.key("x"), current: f.current("x"))
        #expect(retried, "the retry after the next batch")
        #expect(!f.ledger.isOpen(r))
    }

    @Test func aNewFileUnderAnOpenNameIsNotCreditedWithTheOldClose() {
        var f = Fixture()
        let first = f.create("t", ino: 2)
        f.open("t")
        f.rename(first, to: "kept")
        let second = f.create("t", ino: 3) // a new file under the old name, never opened
        f.close("t") // the first file's close, read late
        #expect(!f.ledger.isOpen(first))
        #expect(!f.ledger.isOpen(second))
    }

    @Test func twoOpenFilesUnderOneNameEachEndWithTheirOwnClose() {
        var f = Fixture()
        let first = f.create("x", ino: 2)
        f.open("x")
        f.rename(first, to: "y")
        let second = f.create("x", ino: 3)
        f.open("x")
        f.close("x") // the second file's close
        #expect(f.ledger.isOpen(first) && !f.ledger.isOpen(second))
        f.close("y") // the first file's close, under its new name
        #expect(!f.ledger.isOpen(first))
        #expect(f.ledger.openedAs.isEmpty)
    }

    @Test func aRemovedFileTakesItsOpensAlong() {
        var f = Fixture()
        let r = f.create("x", ino: 2)
        f.open("x")
        f.open("x")
        _ = f.ledger.removeRecord(r)
        #expect(f.ledger.openCounts.isEmpty && f.ledger.openedAs.isEmpty)
        let again = f.create("x", ino: 3)
        f.close("x") // a close of the removed file's descriptor credits nothing to the new one
        #expect(!f.ledger.isOpen(again))
    }

    @Test func aCloseWithoutAnOpenIsIgnored() {
        var f = Fixture()
        let r = f.create("x", ino: 2)
        f.close("x")
        f.open("x")
        #expect(f.ledger.isOpen(r), "the stray close did not pre-pay a later open")
        f.close("x")
        #expect(!f.ledger.isOpen(r))
    }
}
