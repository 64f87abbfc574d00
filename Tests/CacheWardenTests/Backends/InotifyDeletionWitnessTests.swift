import CInotify
import CWardenShims
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// The deletion witness, on real inotify instances: it vouches while no name in the victim's directory was created
/// or renamed over since the ledger's last batch, and from the first such change on it never vouches again in that
/// trim. Everything it reads out of the backend's queue reaches the backend, in order.
@Suite struct InotifyDeletionWitnessTests {
    private let dir = NodeID(7)

    /// A watched tree of `count` files: the backend's instance (with its mask) and the directory's descriptor.
    private final class Watched {
        let tree = TemporaryTree()
        let inotify: InotifyDescriptor
        let wd: Int32
        let fd: Int32

        init(_ count: Int) throws {
            for i in 0..<count { tree.write("f\(i)", size: 100) }
            inotify = try InotifyDescriptor()
            fd = try Syscall.openDirectory(path: tree.path)
            wd = try inotify.addWatch(directory: fd)
        }

        deinit {
            Syscall.close(fd)
            inotify.close()
        }
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

    private func witness(_ w: Watched, watched: Bool = true, kept: Kept = Kept(), drainEvery: Int = 32,
                         unread: [UInt8] = []) -> InotifyDeletionWitness {
        let wd = w.wd
        return unread.withUnsafeBytes { unread in
            InotifyDeletionWitness(inotify: w.inotify, watchDescriptor: { _ in watched ? wd : nil }, keep: { records in
                kept.bytes.withLock { $0.append(contentsOf: records) }
            }, unread: unread, drainEvery: drainEvery)
        }
    }

    /// What a trim does per victim: ask, unlink, announce.
    private func delete(_ name: String, in w: Watched, _ witness: inout InotifyDeletionWitness) -> Bool {
        let vouched = witness.nothingElseChanged(in: dir, fd: w.fd)
        precondition(unlink(w.tree.url(name)) == 0)
        witness.deleted(nameLength: name.utf8.count, in: dir)
        return vouched
    }

    /// Everything queued on `inotify` now.
    private func drain(_ inotify: InotifyDescriptor) throws -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        var out: [UInt8] = []
        while case let n = try inotify.read(into: buffer), n > 0 { out.append(contentsOf: buffer[0..<n]) }
        return out
    }

    @Test func theQueueLimitIsTheKernelsSetting() throws {
        // Read by the library itself: libinotifytools answers -1 (it reads a file that does not exist).
        let text = try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
        let expected = try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(InotifyDescriptor.maxQueuedEvents == expected)
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
        let w = try Watched(200)
        let kept = Kept()
        var witness = witness(w, kept: kept)
        for i in 0..<200 {
            let vouched = delete("f\(i)", in: w, &witness)
            #expect(vouched, "f\(i)")
        }
        // Its own records were read out every `drainEvery` deletions, all handed over in order, none lost: the
        // rest is still queued for the batch.
        let (names, records) = kept.deletions
        #expect(records == names.count && records % 32 == 0 && records >= 160)
        #expect(names == (0..<records).map { "f\($0)" })
        let left = try #require(w.inotify.pendingBytes())
        #expect(left == (records..<200).reduce(0) { $0 + InotifyDeletionWitness.recordSize(nameLength: "f\($1)".utf8.count) })
    }

    @Test func aNewNameInTheDirectoryEndsTheVouchingThereForTheRestOfTheTrim() throws {
        let w = try Watched(20)
        var witness = witness(w)
        for i in 0..<5 {
            let vouched = delete("f\(i)", in: w, &witness)
            #expect(vouched)
        }
        w.tree.write("new-by-client", size: 10)
        let afterTheClient = delete("f5", in: w, &witness)
        #expect(!afterTheClient)
        // Even once both queues are read empty, it does not vouch again in this trim.
        _ = try drain(w.inotify)
        let again = witness.nothingElseChanged(in: dir, fd: w.fd)
        #expect(!again)
    }

    @Test func aRenameOverTheNextVictimIsSeenBeforeItsDeletion() throws {
        let w = try Watched(10)
        var witness = witness(w)
        let first = delete("f0", in: w, &witness)
        #expect(first)
        w.tree.write("incoming.tmp", size: 10)   // pip and ccache write a temporary file and rename it into place
        w.tree.rename("incoming.tmp", "f1")
        let next = witness.nothingElseChanged(in: dir, fd: w.fd)
        #expect(!next)
    }

    @Test func sizeChangesQueuedBeforeTheTrimDoNotStopItAndReachTheBackend() throws {
        let w = try Watched(10)
        w.tree.append("f3", size: 10)   // IN_MODIFY and IN_CLOSE_WRITE the ledger has not read yet
        let kept = Kept()
        var witness = witness(w, kept: kept)
        let vouched = delete("f0", in: w, &witness)
        #expect(vouched)
        // The witness read them to look at them: they are the backend's, first in its next batch.
        let (names, records) = kept.deletions
        #expect(records >= 2 && names.isEmpty)
    }

    @Test func aRenameOverQueuedBeforeTheTrimMeansNoVouchingThere() throws {
        let w = try Watched(10)
        w.tree.write("incoming.tmp", size: 10)
        w.tree.rename("incoming.tmp", "f2")   // queued, unread: the ledger still has f2's old inode
        var witness = witness(w)
        let vouched = delete("f0", in: w, &witness)
        #expect(!vouched)
        let later = delete("f1", in: w, &witness)
        #expect(!later)
    }

    @Test func aNewNameTheBackendHoldsUnreadMeansNoVouchingThere() throws {
        let w = try Watched(10)
        w.tree.write("new-by-client", size: 10)
        let unread = try drain(w.inotify)   // what an earlier trim's witness handed over, not yet translated
        var witness = witness(w, unread: unread)
        let vouched = delete("f0", in: w, &witness)
        #expect(!vouched)
    }

    @Test func aDirectoryTheBackendDoesNotWatchIsNeverVouchedFor() throws {
        let w = try Watched(3)
        var witness = witness(w, watched: false)
        let vouched = delete("f0", in: w, &witness)
        #expect(!vouched)
    }

    @Test func itsOwnInstanceGoesWithTheTrim() throws {
        let w = try Watched(3)
        weak var sentry: InotifySentry?
        do {
            var witness = witness(w)
            let vouched = delete("f0", in: w, &witness)
            #expect(vouched)
            sentry = witness.sentry
            #expect(sentry != nil)
        }
        #expect(sentry == nil)   // its deinit closes the instance
    }

    @Test func theBackendHasOneWitnessOutAtATime() throws {
        // A group trim takes turns between its members' trims: a second witness would read records out of the
        // queue that the first needs to see. The second member's trim re-checks every victim instead.
        let backend = try InotifyBackend(queue: DispatchQueue(label: "witness-lease"), logger: .init(label: "test"))
        defer { backend.stop() }
        let tree = TemporaryTree(under: "/dev/shm")
        var first = backend.deletionWitness(forRootAt: tree.path)
        #expect(first != nil)
        #expect(backend.deletionWitness(forRootAt: tree.path) == nil)
        first = nil
        #expect(backend.deletionWitness(forRootAt: tree.path) != nil)
        _ = first
    }

    @Test func ordinaryDirectoriesDoNotFoldCase() throws {
        for base in ["/tmp", "/dev/shm"] {
            let tree = TemporaryTree(under: base)
            let fd = try Syscall.openDirectory(path: tree.path)
            defer { Syscall.close(fd) }
            #expect(try Syscall.isCaseFolded(fd) == false, "\(base)")
        }
    }

    @Test(.enabled(if: CaseFoldingMount.make() != nil, "needs root and a kernel whose tmpfs folds case (CONFIG_UNICODE)"))
    func aCaseFoldingDirectoryIsNeverVouchedFor() throws {
        let mount = try #require(CaseFoldingMount.make())
        defer { mount.remove() }
        let folded = mount.path + "/folded"
        try Syscall.makeDirectory(folded)
        var flags: UInt32 = 0
        let fd0 = try Syscall.openDirectory(path: folded)
        _ = cwsys_inode_flags(fd0, &flags)
        flags |= CWSYS_CASEFOLD_FL
        #expect(cwsys_set_inode_flags(fd0, flags) == 0)
        Syscall.close(fd0)
        for i in 0..<3 { _ = FileManager.default.createFile(atPath: folded + "/F\(i)", contents: Data([1])) }
        let inotify = try InotifyDescriptor()
        defer { inotify.close() }
        let fd = try Syscall.openDirectory(path: folded)
        defer { Syscall.close(fd) }
        #expect(try Syscall.isCaseFolded(fd))
        let wd = try inotify.addWatch(directory: fd)
        var witness = InotifyDeletionWitness(inotify: inotify, watchDescriptor: { _ in wd }, keep: { _ in })
        let vouched = witness.nothingElseChanged(in: dir, fd: fd)
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

    @Test func theSentryIsQuietThroughDeletionsAndNotFromTheFirstNewNameOn() throws {
        let w = try Watched(3)
        let sentry = try InotifySentry()
        let wd = try #require(sentry.watch(w.fd))
        #expect(sentry.isQuiet)
        w.tree.remove("f0")
        #expect(sentry.isQuiet, "a deletion is not a new name")
        w.tree.write("f0", size: 5)
        // Level-triggered: asked again, it still says so while its queue is not read.
        #expect(!sentry.isQuiet && !sentry.isQuiet)
        // Read out, it names the watch, and is quiet again until the next change.
        #expect(sentry.takeChanges() == [wd])
        #expect(sentry.isQuiet)
        #expect(rename(w.tree.url("f1"), w.tree.url("f2")) == 0)
        #expect(!sentry.isQuiet)
    }

    @Test func directoriesPreparedTogetherAreGuardedAtOnceAndOneWithANewNameIsRefused() throws {
        let tree = TemporaryTree()
        let names = ["a", "b", "c"]
        for d in names { for i in 0..<5 { tree.write("\(d)/f\(i)", size: 10) } }
        let inotify = try InotifyDescriptor()
        defer { inotify.close() }
        var fds: [NodeID: Int32] = [:]
        var wds: [NodeID: Int32] = [:]
        for (k, d) in names.enumerated() {
            let node = NodeID(UInt32(10 + k))
            fds[node] = try Syscall.openDirectory(path: tree.url(d))
            wds[node] = try inotify.addWatch(directory: fds[node]!)
        }
        defer { for fd in fds.values { Syscall.close(fd) } }
        let (a, b, c) = (NodeID(10), NodeID(11), NodeID(12))
        let kept = Kept()
        var witness = InotifyDeletionWitness(inotify: inotify, watchDescriptor: { wds[$0] }, keep: { records in
            kept.bytes.withLock { $0.append(contentsOf: records) }
        })
        // A client's new name in c, queued at the backend before the batch: c cannot be vouched for, a and b can.
        tree.write("c/new-by-client", size: 10)
        for node in [a, b, c] {
            let prepared = witness.prepare(node, fd: fds[node]!)
            #expect(prepared)
        }
        witness.commitPrepared()
        func delete(_ name: String, in node: NodeID, _ d: String) -> Bool {
            let vouched = witness.nothingElseChanged(in: node, fd: fds[node]!)
            precondition(unlink(tree.url("\(d)/\(name)")) == 0)
            witness.deleted(nameLength: name.utf8.count, in: node)
            return vouched
        }
        let inA = delete("f0", in: a, "a"), inC = delete("f0", in: c, "c"), inB = delete("f0", in: b, "b")
        #expect(inA && inB && !inC)
        // The client's record reached the backend (the witness read it out to look at it).
        #expect(kept.bytes.withLock { $0.count } > 0)
        // Watched since the batch: a new name in b now is seen by the sentry, before b's next deletion; a keeps
        // being vouched for, b never again in this trim.
        tree.write("b/late", size: 10)
        let inBAfterTheClient = delete("f1", in: b, "b"), inAAfterIt = delete("f1", in: a, "a")
        #expect(!inBAfterTheClient && inAAfterIt)
        tree.write("a/late", size: 10)
        let inAAfterTheClient = delete("f2", in: a, "a"), inBAfterAll = delete("f2", in: b, "b")
        #expect(!inAAfterTheClient && !inBAfterAll)
    }
}

/// A tmpfs mounted with `casefold` for one test (root only, and only where the kernel has the Unicode tables).
private struct CaseFoldingMount {
    let path: String

    static func make() -> CaseFoldingMount? {
        guard getuid() == 0 else { return nil }
        let path = "/tmp/cw-casefold-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(path, 0o755) == 0 else { return nil }
        guard Glibc.mount("tmpfs", path, "tmpfs", 0, "casefold") == 0 else {
            rmdir(path)
            return nil
        }
        return CaseFoldingMount(path: path)
    }

    func remove() {
        umount2(path, Int32(MNT_DETACH))
        rmdir(path)
    }
}
