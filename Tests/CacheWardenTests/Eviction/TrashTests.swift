import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The trash a root's deletions go through: what a crash left there is emptied at the next start and never
/// counted, a folder of its name that CacheWarden did not make is never touched (the root is refused), and where
/// a unit cannot be renamed in one step (a FUSE mount without `RENAME_NOREPLACE`) it goes file by file, said once.
@Suite(.serialized) struct TrashTests {
    /// A daemon on `tree/cache` (units: entries) with a quota of `quota` bytes.
    static func daemon(_ tree: TemporaryTree, quota: Int) throws -> RunningCLI {
        let config = tree.url("c.conf")
        try
            "size_basis = apparent\ndir.c.path = \(tree.url("cache"))\ndir.c.quota = \(quota)\ndir.c.evict_unit = entry\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        return try RunningCLI(["run", "-c", config])
    }

    static func trashEntries(_ tree: TemporaryTree) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: tree.url("cache/\(TrashFolder.name)"))) ?? []).sorted()
    }

    @Test func aKillInTheMiddleOfAUnitsDeletionLeavesNothingAtTheNextStart() throws {
        let tree = TemporaryTree("cw-kill", under: "/dev/shm")
        for i in 0..<30_000 { tree.write("cache/big/f\(i)", size: 10, mtime: 1_000_000) }
        for i in 0..<5 { tree.write("cache/young/g\(i)", size: 100) }
        for i in 0..<5 { tree.write("outside/o\(i)", size: 100, mtime: 1_000) }
        // What an earlier crash left: a unit and a file in the trash, gone at the start (and never counted).
        tree.write("cache/\(TrashFolder.name)/u-999-1/deep/x", size: 7_000)
        tree.write("cache/\(TrashFolder.name)/f-999-2", size: 3_000)
        #expect(chmod(tree.url("cache/\(TrashFolder.name)"), 0o700) == 0)
        let young = DiskSnapshot(tree.url("cache/young")), outside = DiskSnapshot(tree.url("outside"))
        // The big unit is over the quota at the start: it leaves in one rename, then is deleted in the trash.
        let first = try Self.daemon(tree, quota: 10_000)
        #expect(
            eventually {
                !tree.exists("cache/\(TrashFolder.name)/u-999-1") && !tree.exists("cache/\(TrashFolder.name)/f-999-2")
            })
        #expect(eventually(timeout: 60) { !Self.trashEntries(tree).isEmpty || !tree.exists("cache/big") })
        first.signal(SIGKILL)
        first.process.waitUntilExit()
        #expect(!tree.exists("cache/big"), "the unit was in the client's view during its deletion")
        let left = Self.trashEntries(tree)
        let second = try Self.daemon(tree, quota: 10_000)
        #expect(eventually { second.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(second.stderr)")
        #expect(Self.trashEntries(tree).isEmpty, "left in the trash: \(Self.trashEntries(tree).prefix(3))")
        #expect(second.interrupt() == 0)
        let ready = try #require(second.lines.first { $0.contains("\"event\":\"ready\"") })
        let disk = diskTotals(tree.url("cache"), basis: .apparent)
        #expect(
            ready.contains("\"total\":\(disk.total),") && ready.contains("\"files\":\(disk.files),"),
            "\(ready) vs \(disk)")
        #expect(DiskSnapshot(tree.url("cache/young")).changes(since: young).isEmpty)
        #expect(DiskSnapshot(tree.url("outside")).changes(since: outside).isEmpty)
        print("TrashTests: the kill left \(left.count) entries in the trash (\(left.prefix(2)))")
    }

    @Test func aFolderOfTheTrashsNameThatCacheWardenDidNotMakeIsNeverTouched() throws {
        let tree = TemporaryTree("cw-foreign")
        tree.write("cache/\(TrashFolder.name)/my-notes.txt", size: 100)
        tree.write("cache/old/f", size: 50_000, mtime: 1_000)
        let before = DiskSnapshot(tree.url("cache"))
        let config = tree.url("c.conf")
        try "dir.c.path = \(tree.url("cache"))\ndir.c.quota = 1KB\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        for command in ["check", "run"] {
            let r = try runProcess("/usr/bin/timeout", ["20", cachewardenBinary(), command, "-c", config])
            #expect(
                r.status == 2 && r.err.contains("c.conf:1: dir.c.path: ")
                    && r.err.contains("is not CacheWarden's trash folder"), "\(command): \(r)")
        }
        #expect(DiskSnapshot(tree.url("cache")).changes(since: before).isEmpty)
        // A file of that name is no trash either.
        tree.remove("cache/\(TrashFolder.name)")
        tree.write("cache/\(TrashFolder.name)", size: 10)
        let r = try runProcess(cachewardenBinary(), ["check", "-c", config])
        #expect(r.status == 2 && r.err.contains("is not CacheWarden's trash folder"), "\(r)")
    }

    /// The trash is not counted, reported or read: files moved in (a crash's leftovers) count nothing.
    @Test func theTrashIsNeverCounted() throws {
        let tree = TemporaryTree("cw-trash")
        tree.write("cache/a", size: 100)
        tree.write("cache/\(TrashFolder.name)/u-1-1/x", size: 5_000)
        let h = try WatcherHarness(TemporaryTree("cw-trash"), basis: .apparent)
        h.tree.write("a", size: 100)
        h.tree.mkdir(TrashFolder.name)
        h.tree.write("\(TrashFolder.name)/f-1-2", size: 7_000)
        h.tree.write("b", size: 50)
        #expect(eventually { h.total == 150 && h.files == 2 }, "total \(h.total), \(h.files) files")
        #expect(!h.log.writes.contains { $0.file.contains(TrashFolder.name) })
        let report = try Watcher.report(
            WardenSettings(directories: [DirectorySettings(name: "c", path: tree.url("cache"))], sizeBasis: .apparent))
        #expect(report.first?.totals.total == 100 && report.first?.totals.files == 1)
    }
}
