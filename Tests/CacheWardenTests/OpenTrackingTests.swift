import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Opens are tracked (`spare_open`, the default, and `order = opened`) on an inotify instance of their own: the
/// opens of a walk over a big tree — the watcher's own scans, `find`, `du`, a backup — used to fill the queue that
/// keeps the totals, and on a tree of ~10k directories the rescan after that overflow overflowed it again, for ever
/// (found by the status benchmark on a 1M-file tree: eight rescans in 15 s, both cores busy).
@Suite struct OpenTrackingTests {
    /// More directories than `max_queued_events` (16,384 by default) can hold the opens and closes of.
    static let directories = 9000

    @Test func walkingEveryDirectoryOfABigTreeNeverOverflowsTheQueueThatKeepsTheTotals() throws {
        let tree = TemporaryTree()
        for i in 0..<Self.directories { tree.mkdir("d\(i / 100)/e\(i)") }
        for i in 0..<200 { tree.write("d\(i % 90)/e\(i * 40 + i % 40)/f", size: 100) }
        let harness = try WatcherHarness(tree, quota: 100_000_000) // spare_open is on by default
        // A find over the whole tree, twice: every directory and every file opened and closed.
        for _ in 0..<2 {
            let walker = FileManager.default.enumerator(atPath: tree.path)
            while let name = walker?.nextObject() as? String {
                if name.hasSuffix("/f"), let h = FileHandle(forReadingAtPath: tree.url(name)) { try h.close() }
            }
        }
        // A write after the walk: once its line is here, every record the walk caused in the same queue was read.
        tree.write("marker", size: 10)
        #expect(eventually { harness.log.writes.contains { $0.file == "marker" } })
        #expect(
            !harness.log.names.contains("overflow") && !harness.log.names.contains("rescan"),
            "\(harness.log.names.filter { $0 != "write" })")
        #expect(harness.totalsMatchDisk())
    }

    @Test func openFilesAreStillSparedAfterTheOpensQueueOverflowedAndRecovered() throws {
        let tree = TemporaryTree()
        for i in 0..<Self.directories { tree.mkdir("d\(i / 100)/e\(i)") }
        for i in 0..<10 { tree.write("old\(i)", size: 10_000, mtime: 1_700_000_000 + Double(i)) }
        let harness = try WatcherHarness(tree, quota: 200_000)
        // The scan's own opens overflow the opens queue (its counts are forgotten); an open made once it has been
        // read is known again. (Opened again on each poll: an open made while that queue was still full is lost.)
        var held: [FileHandle] = []
        defer { for h in held { try? h.close() } }
        #expect(
            eventually {
                if let h = FileHandle(forReadingAtPath: tree.url("old0")) { held.append(h) }
                return harness.watcher.openFiles("cache").contains("old0")
            })
        let trim = try harness.watcher.trim("cache", to: diskTotals(tree.path).total - 1)
        #expect(trim.removed == 1 && tree.exists("old0") && !tree.exists("old1"), "\(trim)")
        #expect(harness.totalsMatchDisk())
    }
}
