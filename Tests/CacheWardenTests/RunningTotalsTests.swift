import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The in-memory totals equal a fresh scan of the disk after every kind of change, with real inotify.
@Suite struct RunningTotalsTests {
    @Test func initialScanCountsRegularFilesOnly() throws {
        let tree = TemporaryTree()
        tree.write("a", size: 10_000)
        tree.write("sub/b", size: 5000)
        tree.write("sub/deeper/c", size: 1)
        symlink("/etc/passwd", tree.url("link"))
        mkfifo(tree.url("fifo"), 0o644)
        let h = try WatcherHarness(tree)
        let disk = diskTotals(tree.path)
        #expect(h.total == disk.total)
        #expect(h.files == 3)
        #expect(disk.files == 3)
    }

    @Test func createsAppendsTruncatesAndDeletesKeepTotalsExact() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree)
        tree.write("one", size: 100_000)
        tree.write("two", size: 3000)
        #expect(h.totalsMatchDisk())
        tree.append("one", size: 50_000)
        #expect(h.totalsMatchDisk())
        tree.truncate("one", to: 10)
        #expect(h.totalsMatchDisk())
        tree.remove("two")
        #expect(h.totalsMatchDisk())
        #expect(h.files == 1)
    }

    /// A file created in a new folder, found empty by the read of that folder, then written and closed: counted
    /// at its final size, on every backend. (A backend may not take an event queued before a folder was read as
    /// already seen by that read: fanotify merges a file's later writes into its creation's event while that is
    /// unread.)
    @Test(arguments: testedBackends) func aFileWrittenAfterItsNewFolderWasReadIsCountedAtItsFinalSize(
        _ backend: BackendChoice
    ) throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) {
            $0.backend = backend; $0.pollInterval = 1
        }
        for round in 0..<5 {
            tree.mkdir("d\(round)")
            let fd = open(tree.url("d\(round)/f"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(fd >= 0)
            #expect(eventually { h.files == round + 1 }, "round \(round): the empty file was not counted")
            let payload = [UInt8](repeating: 7, count: 4096)
            #expect(payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 4096)
            close(fd)
            #expect(eventually { h.total == Int64(4096 * (round + 1)) }, "round \(round): total \(h.total)")
        }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    /// A writer filling new folders at full speed, each file written once: the read of a new folder announces the
    /// files it finds, and the events about them that follow (their closes; under fanotify also their creations
    /// and writes, queued before the read) add no second `write` line for the same write. A file found before it
    /// was written may have two, the first with the size it had then.
    @Test(arguments: testedBackends) func oneWriteGetsOneWriteLine(_ backend: BackendChoice) throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) {
            $0.backend = backend; $0.pollInterval = 1
        }
        let payload = [UInt8](repeating: 7, count: 4096)
        for folder in 0..<30 {
            tree.mkdir("w\(folder)")
            for i in 0..<50 {
                let fd = open(tree.url("w\(folder)/f\(i)"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                #expect(fd >= 0 && payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 4096)
                close(fd)
            }
        }
        #expect(h.totalsMatchDisk(basis: .apparent))
        // A last file in a last folder, behind every event the writer caused: once it is said, all are.
        tree.write("z/marker", size: 1)
        #expect(
            eventually {
                h.log.writes.contains { $0.file == "z/marker" } && Set(h.log.writes.map(\.file)).count == 1501
            })
        var sizes: [String: [Int64]] = [:]
        for w in h.log.writes { sizes[w.file, default: []].append(w.size) }
        let repeated = sizes.filter { Set($0.value).count < $0.value.count }
        #expect(
            repeated.isEmpty,
            "\(repeated.count) files with the same size said twice, e.g. \(repeated.first.map { "\($0.key): \($0.value)" } ?? "")"
        )
    }

    /// The other side: a file the read of its new folder found half written, then written again and closed, gets
    /// a second line with its new size. The folder is made outside and moved in, so that its read is what finds
    /// the file (polling announces new files only).
    @Test(arguments: testedBackends.filter { $0 != .poll }) func aFileWrittenAgainAfterItsFolderWasReadGetsASecondLine(
        _ backend: BackendChoice
    ) throws {
        let tree = TemporaryTree(), outside = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) { $0.backend = backend }
        outside.mkdir("new")
        let fd = open(outside.url("new/f"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        let payload = [UInt8](repeating: 7, count: 100)
        #expect(payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 100)
        #expect(Glibc.rename(outside.url("new"), tree.url("new")) == 0)
        #expect(eventually { h.log.writes.contains { $0.file == "new/f" } }, "the read of new/ did not announce f")
        #expect(payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 100)
        close(fd)
        #expect(
            eventually { h.log.writes.filter { $0.file == "new/f" }.map(\.size) == [100, 200] },
            "lines for new/f: \(h.log.writes.filter { $0.file == "new/f" }.map(\.size))")
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func apparentBasisCountsBytes() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent)
        tree.write("x", size: 1234)
        tree.write("d/y", size: 1)
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(h.total == 1235)
    }

    @Test func truncateWithoutCloseIsCounted() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent)
        tree.write("held", size: 0)
        // A writer that keeps the file open: IN_MODIFY with no close yet.
        let fd = open(tree.url("held"), O_WRONLY)
        defer { close(fd) }
        let bytes = [UInt8](repeating: 1, count: 4096)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, 4096) }
        #expect(eventually { h.total == 4096 })
        _ = ftruncate(fd, 100)
        #expect(eventually { h.total == 100 })
    }

    @Test func renamesInsideTheTreeMoveNothing() throws {
        let tree = TemporaryTree()
        tree.write("dir/a", size: 8000)
        tree.write("dir/sub/b", size: 8000)
        let h = try WatcherHarness(tree)
        tree.rename("dir/a", "a-renamed")
        tree.rename("dir", "dir2")
        tree.mkdir("x/y")
        tree.rename("dir2", "x/y/dir3")
        tree.write("x/y/dir3/sub/c", size: 1000)
        #expect(h.totalsMatchDisk())
        // Overwriting rename: the target's bytes leave, the source's stay.
        tree.write("p", size: 20_000)
        tree.write("q", size: 4000)
        tree.rename("q", "p")
        #expect(h.totalsMatchDisk())
        #expect(h.files == 4)
    }

    @Test func movesInAndOutOfTheTreeAdjustTotals() throws {
        let outside = TemporaryTree("cw-outside")
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree)
        outside.write("file", size: 30_000)
        outside.write("folder/inner/x", size: 20_000)
        outside.write("folder/y", size: 10_000)
        #expect(Glibc.rename(outside.url("file"), tree.url("file")) == 0)
        #expect(Glibc.rename(outside.url("folder"), tree.url("folder")) == 0)
        #expect(h.totalsMatchDisk())
        #expect(h.files == 3)
        // Files written into the moved-in folder are seen: its watches were added.
        tree.write("folder/inner/z", size: 5000)
        #expect(h.totalsMatchDisk())
        #expect(Glibc.rename(tree.url("folder"), outside.url("back")) == 0)
        #expect(Glibc.rename(tree.url("file"), outside.url("file2")) == 0)
        #expect(h.totalsMatchDisk())
        #expect(h.files == 0)
        // The moved-out folder is no longer watched: writing there changes nothing.
        outside.write("back/inner/later", size: 9000)
        // A marker written inside afterwards: once it is counted, any record about "later" would have been read.
        tree.write("marker", size: 7)
        #expect(eventually { h.files == 1 })
        #expect(h.totalsMatchDisk())
    }

    @Test func hardLinksCountOnce() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree)
        tree.write("orig", size: 50_000)
        tree.mkdir("other")
        #expect(link(tree.url("orig"), tree.url("other/alias")) == 0)
        #expect(h.totalsMatchDisk())
        #expect(h.files == 1)
        tree.remove("orig")
        #expect(h.totalsMatchDisk())
        #expect(h.files == 1)
        tree.remove("other/alias")
        #expect(h.totalsMatchDisk())
        #expect(h.total == 0)
    }

    @Test func newSubdirectoriesInATightLoopLoseNothing() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent)
        for i in 0..<200 {
            tree.write("d\(i)/a/b/c/file", size: 100 + i)
        }
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(h.files == 200)
        // Every file got its write line, with its path relative to the root.
        #expect(eventually { Set(h.log.writes.map(\.file)).count == 200 })
        #expect(h.log.writes.contains { $0.file == "d7/a/b/c/file" })
    }

    @Test func deletingADirectoryTreeSubtractsItAll() throws {
        let tree = TemporaryTree()
        for i in 0..<20 { tree.write("big/\(i % 4)/f\(i)", size: 4096) }
        tree.write("keep", size: 4096)
        let h = try WatcherHarness(tree)
        tree.remove("big")
        #expect(h.totalsMatchDisk())
        #expect(h.files == 1)
    }

    @Test func writeLinesCarryTheFileAndTheTotal() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent)
        tree.write("sub/new.bin", size: 777)
        // The new folder may be read while the file is still being written (a `write` line for what the scan
        // found): the line after the close carries the final size.
        #expect(eventually { h.log.writes.contains { $0.file == "sub/new.bin" && $0.size == 777 } })
        let w = try #require(h.log.writes.last { $0.file == "sub/new.bin" })
        #expect(w.size == 777)
        #expect(w.total == 777)
        #expect(w.files == 1)
        #expect(w.dir == "cache")
    }
}

/// Two registered roots side by side.
@Suite struct TwoRootsTests {
    @Test func movesBetweenTwoRootsMoveTheBytes() throws {
        let parent = TemporaryTree()
        parent.write("a/file", size: 7000)
        parent.write("a/dir/inner", size: 3000)
        parent.mkdir("b")
        let log = EventLog()
        let watcher = Watcher(
            settings: WardenSettings(
                directories: [
                    DirectorySettings(name: "a", path: parent.url("a")),
                    DirectorySettings(name: "b", path: parent.url("b")),
                ], sizeBasis: .apparent)
        ) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        parent.rename("a/file", "b/file")
        parent.rename("a/dir", "b/dir")
        #expect(eventually { watcher.totals().map(\.total) == [0, 10_000] })
        // The moved directory is watched in its new root.
        parent.write("b/dir/new", size: 500)
        #expect(eventually { watcher.totals().map(\.total) == [0, 10_500] })
        #expect(eventually { log.writes.contains { $0.dir == "b" && $0.file == "dir/new" } })
    }
}

extension TwoRootsTests {
    /// A hard-linked file with a name in each root, written through one: the other root's folder hears nothing,
    /// so its name is statted again in the same batch — not left for a later change that may never come (the
    /// model test once found the other total behind for good after its last step).
    @Test func aWriteThroughOneNameOfAFileLinkedAcrossRootsIsCountedInBoth() throws {
        let parent = TemporaryTree()
        parent.write("a/f", size: 1000)
        #expect(link(parent.url("a/f"), parent.url("a/h")) == 0)
        parent.mkdir("b")
        let watcher = Watcher(
            settings: WardenSettings(
                directories: [
                    DirectorySettings(name: "a", path: parent.url("a")),
                    DirectorySettings(name: "b", path: parent.url("b")),
                ], sizeBasis: .apparent))
        try watcher.start()
        defer { watcher.stop() }
        parent.rename("a/f", "b/out")
        #expect(eventually { watcher.totals().map(\.total) == [1000, 1000] })
        parent.append("a/h", size: 5000)
        #expect(eventually { watcher.totals().map(\.total) == [6000, 6000] }, "\(watcher.totals())")
    }
}
