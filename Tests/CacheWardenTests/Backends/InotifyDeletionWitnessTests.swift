import CInotify
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// The deletion witness, on a real inotify instance: it vouches exactly while the queue holds nothing but the
/// trim's own deletions, and from the first other change on it never vouches again in that trim.
@Suite struct InotifyDeletionWitnessTests {
    private let dir = NodeID(7)

    /// A tree of `count` files and an inotify instance watching it with the backend's mask.
    private func watched(_ count: Int) throws -> (TemporaryTree, InotifyDescriptor) {
        let tree = TemporaryTree()
        for i in 0..<count { tree.write("f\(i)", size: 100) }
        let inotify = try InotifyDescriptor()
        let fd = try Syscall.openDirectory(path: tree.path)
        defer { Syscall.close(fd) }
        _ = try inotify.addWatch(directory: fd)
        return (tree, inotify)
    }

    /// What the witness hands to the backend for its next batch.
    private final class Kept: Sendable {
        let bytes = Mutex<[UInt8]>([])
        /// The names of the kept records that are plain `IN_DELETE`s, in order, and how many records there were.
        var deletions: (names: [String], records: Int) {
            bytes.withLock { bytes in
                var names: [String] = []
                var records = 0
                bytes.withUnsafeBytes { raw in
                    InotifyRecords.forEach(in: raw) { r in
                        records += 1
                        if r.mask == CINOTIFY_IN_DELETE { names.append(String(decoding: r.name, as: UTF8.self)) }
                    }
                }
                return (names, records)
            }
        }
    }

    private func witness(_ inotify: InotifyDescriptor, watched: Bool = true, kept: Kept = Kept()) -> InotifyDeletionWitness {
        InotifyDeletionWitness(inotify: inotify, isWatched: { _ in watched }, keep: { records in
            kept.bytes.withLock { $0.append(contentsOf: records) }
        })
    }

    /// What a trim does per victim: ask, unlink, announce.
    private func delete(_ name: String, in tree: TemporaryTree, _ w: inout InotifyDeletionWitness) -> Bool {
        let vouched = w.nothingElseChanged(in: dir)
        precondition(unlink(tree.url(name)) == 0)
        if vouched { w.deleted(nameLength: name.utf8.count) }
        return vouched
    }

    @Test func theRecordSizeIsWhatTheKernelQueuesForEachNameLength() throws {
        let names = (1...40).map { String(repeating: "n", count: $0) } + [String(repeating: "é", count: 100)]
        let tree = TemporaryTree()
        for name in names { tree.write(name, size: 1) }
        let inotify = try InotifyDescriptor()
        defer { inotify.close() }
        let fd = try Syscall.openDirectory(path: tree.path)
        defer { Syscall.close(fd) }
        _ = try inotify.addWatch(directory: fd)
        var queued = 0
        for name in names {
            tree.remove(name)
            queued += InotifyDeletionWitness.recordSize(nameLength: name.utf8.count)
            #expect(inotify.pendingBytes() == queued, "after deleting a \(name.utf8.count)-byte name")
        }
    }

    @Test func itVouchesWhileOnlyItsOwnDeletionsAreQueuedAndHandsWhatItReadsToTheBackend() throws {
        let (tree, inotify) = try watched(200)
        defer { inotify.close() }
        let kept = Kept()
        var w = witness(inotify, kept: kept)
        for i in 0..<200 {
            let vouched = delete("f\(i)", in: tree, &w)
            #expect(vouched, "f\(i)")
        }
        // Its own records were read out every `drainEvery` deletions, all handed over in order, none lost: the
        // rest is still queued for the batch.
        let (names, records) = kept.deletions
        #expect(records == names.count && records % InotifyDeletionWitness.drainEvery == 0 && records >= 160)
        #expect(names == (0..<records).map { "f\($0)" })
        let left = try #require(inotify.pendingBytes())
        #expect(left == (records..<200).reduce(0) { $0 + InotifyDeletionWitness.recordSize(nameLength: "f\($1)".utf8.count) })
    }

    @Test func anyOtherChangeEndsTheVouchingForTheRestOfTheTrim() throws {
        let (tree, inotify) = try watched(20)
        defer { inotify.close() }
        var w = witness(inotify)
        for i in 0..<5 {
            let vouched = delete("f\(i)", in: tree, &w)
            #expect(vouched)
        }
        tree.write("new-by-client", size: 10)
        let afterTheClient = delete("f5", in: tree, &w)
        #expect(!afterTheClient)
        // Even once the queue is read empty, it does not vouch again in this trim.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        while try inotify.read(into: buffer) > 0 {}
        let again = w.nothingElseChanged(in: dir)
        #expect(!again)
    }

    @Test func aRenameOverTheNextVictimIsSeenBeforeItsDeletion() throws {
        let (tree, inotify) = try watched(10)
        defer { inotify.close() }
        var w = witness(inotify)
        let first = delete("f0", in: tree, &w)
        #expect(first)
        tree.write("incoming.tmp", size: 10)   // pip and ccache write a temporary file and rename it into place
        tree.rename("incoming.tmp", "f1")
        let next = w.nothingElseChanged(in: dir)
        #expect(!next)
    }

    @Test func recordsQueuedBeforeTheTrimMeanNoVouching() throws {
        let (tree, inotify) = try watched(10)
        defer { inotify.close() }
        tree.append("f3", size: 10)   // an IN_MODIFY the ledger has not read yet
        var w = witness(inotify)
        let vouched = w.nothingElseChanged(in: dir)
        #expect(!vouched)
    }

    @Test func aDirectoryTheBackendDoesNotWatchIsNeverVouchedFor() throws {
        let (tree, inotify) = try watched(3)
        defer { inotify.close() }
        var w = witness(inotify, watched: false)
        let vouched = delete("f0", in: tree, &w)
        #expect(!vouched)
    }

    @Test func theBackendOffersAWitnessOnlyOnFilesystemsOnlyThisKernelChanges() throws {
        let backend = try InotifyBackend(queue: DispatchQueue(label: "witness-test"), logger: .init(label: "test"))
        defer { backend.stop() }
        let tree = TemporaryTree()
        let magic = try Syscall.fileSystemMagic(tree.path)
        #expect((backend.deletionWitness(forRootAt: tree.path) != nil) == InotifyBackend.localFileSystems.contains(magic))
        // procfs (0x9fa0) is not one of them; nor is a path that does not exist.
        #expect(try Syscall.fileSystemMagic("/proc") == 0x9FA0)
        #expect(backend.deletionWitness(forRootAt: "/proc") == nil)
        #expect(backend.deletionWitness(forRootAt: tree.path + "/missing") == nil)
    }
}
