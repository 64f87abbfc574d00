import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// Events are facts: an `evict` line means CacheWarden deleted that file, and a file that appears by any means
/// gets its `write` line.
@Suite struct EvictionFactsTests {
    /// Ten files of 10 kB, f0 oldest, in a 60 kB quota: the startup trim takes f0, f1, … until 30 kB are left. The
    /// client acts on `victim` once, right as the trim chose it (the veto hook runs right before the deletion);
    /// returns the harness and whether the client acted.
    private func trimRacing(
        _ tree: TemporaryTree, client victim: String,
        _ act: @escaping @Sendable (_ path: String) -> Void
    ) throws -> (WatcherHarness, Bool) {
        for i in 0..<10 { tree.write("f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        let acted = Atomic<Bool>(false)
        let path = tree.path
        let h = try WatcherHarness(tree, quota: 60_000, basis: .apparent) { dir in
            dir.shouldEvict = { candidate in
                if candidate.file == victim, !acted.exchange(true, ordering: .relaxed) { act(path) }
                return true
            }
        }
        let trimmed = eventually { !h.log.trims.isEmpty }
        return (h, trimmed && acted.load(ordering: .relaxed))
    }

    @Test func aVictimRenamedByItsClientIsNoEvictLineAndTheTrimGoesOn() throws {
        let tree = TemporaryTree()
        // The client wins the race for the oldest file: it renames it away just as the trim chose it.
        let (h, clientWon) = try trimRacing(tree, client: "f0") { path in
            _ = Glibc.rename(path + "/f0", path + "/kept-by-client")
        }
        #expect(clientWon)
        // No evict line for the file the client took; every evict line names a file that is gone.
        #expect(!h.log.evictions.contains { $0.file == "f0" || $0.file == "kept-by-client" })
        for e in h.log.evictions { #expect(!tree.exists(e.file), "\(e.file) has an evict line but exists") }
        // The trim went on with the next candidates and reached its target counting the file where it went.
        #expect(tree.exists("kept-by-client"))
        #expect(h.log.evictions.map(\.file) == (1...7).map { "f\($0)" })
        #expect(eventually { h.log.writes.contains { $0.file == "kept-by-client" } })
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func aVictimReplacedByItsClientJustBeforeItsDeletionStays() throws {
        let tree = TemporaryTree()
        // The client renames a fresh entry over the fourth-oldest file right as the trim chose it (pip and ccache
        // store entries so): the re-check right before the unlink sees another inode and leaves the new file.
        let (h, clientReplacedIt) = try trimRacing(tree, client: "f3") { path in
            let fd = open(path + "/.incoming", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = [UInt8](repeating: 1, count: 12_345).withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
            close(fd)
            _ = Glibc.rename(path + "/.incoming", path + "/f3")
        }
        #expect(clientReplacedIt)
        var st = stat()
        #expect(lstat(tree.url("f3"), &st) == 0 && st.st_size == 12_345, "the client's new entry is still there")
        #expect(!h.log.evictions.contains { $0.file == "f3" })
        #expect(Array(h.log.evictions.map(\.file).prefix(3)) == ["f0", "f1", "f2"])
        for e in h.log.evictions { #expect(!tree.exists(e.file), "\(e.file) has an evict line but exists") }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func aVictimRewrittenInPlaceJustBeforeItsDeletionStays() throws {
        let tree = TemporaryTree()
        // The client rewrites the fourth-oldest file in place (same inode, new contents, new mtime) right as the
        // trim chose it: it is no longer old, and the re-check of its age right before the unlink leaves it.
        let (h, clientRewroteIt) = try trimRacing(tree, client: "f3") { path in
            let fd = open(path + "/f3", O_WRONLY | O_TRUNC)
            _ = [UInt8](repeating: 2, count: 7_777).withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
            close(fd)
        }
        #expect(clientRewroteIt)
        var st = stat()
        #expect(lstat(tree.url("f3"), &st) == 0 && st.st_size == 7_777, "the rewritten file is still there")
        #expect(!h.log.evictions.contains { $0.file == "f3" })
        #expect(Array(h.log.evictions.map(\.file).prefix(3)) == ["f0", "f1", "f2"])
        for e in h.log.evictions { #expect(!tree.exists(e.file), "\(e.file) has an evict line but exists") }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test func aVictimReplacedInADirectoryPastTheDescriptorCacheStays() throws {
        let tree = TemporaryTree()
        // One file per directory, oldest in d0: the startup trim takes them directory by directory, past the
        // point where the deleter's descriptor cache is flushed. The client renames a fresh entry over the victim
        // of a directory just before that point.
        let dirs = VerifiedDirectories.maxCached + 44
        for i in 0..<dirs { tree.write(String(format: "d%03d/f", i), size: 1000, mtime: 1_000_000 + Double(i)) }
        let victim = String(format: "d%03d/f", VerifiedDirectories.maxCached - 6)
        let acted = Atomic<Bool>(false)
        let path = tree.path
        // Quota 80 kB: the trim keeps 40 files, so it deletes in the first dirs - 40 directories.
        let h = try WatcherHarness(tree, quota: 80_000, basis: .apparent) { dir in
            dir.shouldEvict = { candidate in
                if candidate.file == victim, !acted.exchange(true, ordering: .relaxed) {
                    let fd = open(path + "/.incoming", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                    _ = [UInt8](repeating: 1, count: 4321).withUnsafeBytes {
                        Glibc.write(fd, $0.baseAddress!, $0.count)
                    }
                    close(fd)
                    _ = Glibc.rename(path + "/.incoming", path + "/" + victim)
                }
                return true
            }
        }
        #expect(eventually { !h.log.trims.isEmpty })
        let clientActed = acted.load(ordering: .relaxed)
        #expect(clientActed, "the trim reached \(victim)")
        var st = stat()
        #expect(lstat(tree.url(victim), &st) == 0 && st.st_size == 4321, "the client's new entry is still there")
        #expect(!h.log.evictions.contains { $0.file == victim })
        #expect(h.log.evictions.count > VerifiedDirectories.maxCached)
        for e in h.log.evictions { #expect(!tree.exists(e.file), "\(e.file) has an evict line but exists") }
        #expect(h.totalsMatchDisk(basis: .apparent))
    }

    @Test(
        .enabled(if: which("inotifywait") != nil, "needs inotifywait as an independent witness"),
        arguments: testedBackends.filter { $0 != .poll })
    func underAWriteThenRenameClientEveryEvictLineIsADeletion(_ backend: BackendChoice) throws {
        let tree = TemporaryTree()
        // An independent witness of every name that leaves the folder. A victim leaves in one step (`SafeRemover`):
        // it is moved into the trash (a folder of its own, which this witness does not watch), checked there and
        // unlinked; the witness sees its `moved_from` with no `moved_to` here after it (a client's rename within the
        // folder has both, queued together).
        let witness = try RunningCLI(
            ["-m", "-q", "-e", "delete,moved_from,moved_to", "--format", "%f|%e", tree.path],
            executable: which("inotifywait")!)
        #expect(waitUntilWatching(witness.process.processIdentifier))
        let h = try WatcherHarness(tree, quota: 400_000, basis: .apparent) { $0.backend = backend }
        // A pip-like client: write a temporary file, then rename it into place; and now and then rename an
        // entry away (as a client moving an entry aside), racing the trims. Every 100 files (≈ 550 kB, over the
        // quota) the client waits until the watcher has seen its last entry and trimmed: the watcher reads its
        // queue in batches of up to 1 MiB, so a client that ran ahead of a starved watcher would otherwise meet
        // a single trim instead of the many races this test is about.
        var g = ModelBasedTotalsTests.Generator(state: 99)
        for i in 0..<2000 {
            tree.write(".tmp\(i)", size: 1000 + g.below(9000))
            tree.rename(".tmp\(i)", "entry\(i)")
            if i % 7 == 0, i > 10, tree.exists("entry\(i - 10)") {
                _ = Glibc.rename(tree.url("entry\(i - 10)"), tree.url("aside\(i)"))
            }
            if i % 100 == 99 {
                #expect(
                    eventually { h.log.writes.contains { $0.file == "entry\(i)" } && (0...400_000).contains(h.total) })
            }
        }
        #expect(h.log.trims.count >= 20)
        #expect(h.totalsMatchDisk(basis: .apparent))
        let evicted = h.log.evictions.map(\.file)
        #expect(eventually { Set(evicted).isSubset(of: Self.departures(witness.lines)) })
        let strays = Set(evicted).subtracting(Self.departures(witness.lines))
        #expect(strays.isEmpty, "evict lines without a deletion: \(strays.prefix(10))")
    }

    /// The names the witness saw leave the folder: deleted there, or moved out of it (a `moved_from` not followed
    /// at once by its `moved_to` in the same folder — inotify queues a rename's two halves together).
    static func departures(_ lines: [String]) -> Set<String> {
        let events = lines.map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }.filter {
            $0.count == 2
        }
        var gone = Set<String>()
        for (i, e) in events.enumerated() {
            if e[1].contains("DELETE") { gone.insert(e[0]) }
            if e[1].contains("MOVED_FROM"), !(i + 1 < events.count && events[i + 1][1].contains("MOVED_TO")) {
                gone.insert(e[0])
            }
        }
        return gone
    }

    @Test func aFileLinkedInGetsAWriteLine() throws {
        let tree = TemporaryTree()
        let outside = TemporaryTree("cw-outside")
        outside.write("object.o", size: 4096)
        let h = try WatcherHarness(tree, basis: .apparent)
        // ccache with hard_link = true stores entries so: link(2), no open, no close.
        #expect(link(outside.url("object.o"), tree.url("entry")) == 0)
        #expect(eventually { h.log.writes.contains { $0.file == "entry" && $0.size == 4096 } })
        // A second name inside the tree is a write line too, and the bytes still count once.
        #expect(link(tree.url("entry"), tree.url("again")) == 0)
        #expect(eventually { h.log.writes.contains { $0.file == "again" } })
        #expect(h.totalsMatchDisk(basis: .apparent))
        #expect(h.total == 4096)
    }
}
