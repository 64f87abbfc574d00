import Foundation
import Glibc
import Logging
import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// Defects found in review of the core split, each pinned by the reproduction that found it.
@Suite struct ReviewRegressionTests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    static func newRecord(_ l: inout SizeLedger, _ dir: NodeID, _ name: String) -> RecordID {
        Array(name.utf8).withUnsafeBytes { l.record(in: dir, named: $0).record }
    }

    static func heapIsValid(_ l: SizeLedger, _ root: RootID) -> Bool {
        let heap = l.victims(root)
        for (k, r) in heap.enumerated() where k > 0 {
            if l.victimAge(heap[(k - 1) / 2]) > l.victimAge(r) { return false }
        }
        return true
    }

    /// A name whose inode changes to one that already has a link group with another age keeps the heap valid.
    @Test func inodeChangeIntoExistingGroupKeepsHeapValid() {
        var l = SizeLedger()
        let root = RootID(0)
        let top = l.addRoot(root, path: Self.bytes("/c"), ino: 1, dev: 1, ordered: true)
        // Insertion order builds the heap [a0, r1, b0, s10, c2, x7, L5].
        func add(_ name: String, ino: UInt64, age: Int64, links: UInt32 = 1) -> RecordID {
            let r = Self.newRecord(&l, top, name)
            _ = l.apply(FileStatus(ino: ino, bytes: 100, age: age, links: links), to: r, keepOpenedAge: false)
            return r
        }
        _ = add("a", ino: 10, age: 0)
        let r = add("r", ino: 11, age: 1)
        _ = add("b", ino: 12, age: 0)
        _ = add("s", ino: 99, age: 10, links: 2) // linked: its other name is outside the root
        _ = add("c", ino: 14, age: 2)
        _ = add("x", ino: 15, age: 7)
        _ = add("L", ino: 16, age: 5)
        #expect(Self.heapIsValid(l, root))
        // Name r now names inode 99 (a link to s's file), whose age moved on (ctime order, or s's stat is old).
        _ = l.apply(FileStatus(ino: 99, bytes: 100, age: 20, links: 3), to: r, keepOpenedAge: false)
        #expect(Self.heapIsValid(l, root), "heap order broken after an inode change into an existing group")
        var order: [Int64] = []
        var cursor = VictimCursor(root)
        while case let g = cursor.next(atLeast: 1, in: l), !g.isEmpty { order += g.map(\.age) }
        #expect(order == order.sorted(), "victims not oldest first: \(order)")
    }

    /// The inode index, built while a name is detached (rename in flight), still finds it: a later link counts once.
    @Test func inodeIndexBuiltDuringARenameMissesTheDetachedName() {
        var l = SizeLedger()
        let root = RootID(0)
        let top = l.addRoot(root, path: Self.bytes("/c"), ino: 1, dev: 1)
        let a = Self.newRecord(&l, top, "a")
        _ = l.apply(FileStatus(ino: 50, bytes: 1000, age: 1, links: 1), to: a, keepOpenedAge: false)
        let c = Self.newRecord(&l, top, "c")
        _ = l.apply(FileStatus(ino: 60, bytes: 7, age: 1, links: 1), to: c, keepOpenedAge: false)
        // `mv a a2` whose IN_MOVED_TO comes in the next batch; meanwhile `ln c d` is statted (builds the index).
        l.detachRecord(a)
        let d = Self.newRecord(&l, top, "d")
        _ = l.apply(FileStatus(ino: 60, bytes: 7, age: 1, links: 2), to: d, keepOpenedAge: false)
        _ = Self.bytes("a2").withUnsafeBytes { l.attachRecord(a, dir: top, name: $0) }
        // `ln a2 e`: only e gets an event (the link count change is no IN_ATTRIB for the directory watch).
        let e = Self.newRecord(&l, top, "e")
        _ = l.apply(FileStatus(ino: 50, bytes: 1000, age: 1, links: 2), to: e, keepOpenedAge: false)
        #expect(l.account(root)!.files == 2, "files \(l.account(root)!.files), disk has 2 inodes")
        #expect(l.total(root) == 1007, "total \(l.total(root)), disk 1007")
    }

    /// Renaming a counted file to an excluded name takes it out of the total.
    @Test func renameToAnExcludedNameLeavesTheFileCounted() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) { $0.exclude = ["*.tmp"] }
        tree.write("a", size: 5000)
        #expect(eventually { h.total == 5000 })
        tree.rename("a", "a.tmp")
        // A fresh scan (with the same exclude) counts nothing.
        let ok = eventually(timeout: 3) { h.total == 0 && h.files == 0 }
        #expect(ok, "after mv a a.tmp: total \(h.total), files \(h.files); a fresh scan says 0, 0")
    }

    /// Same for a directory moved under an excluded name.
    @Test func directoryMovedToAnExcludedNameStaysCounted() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent) { $0.exclude = ["URLCACHE/**"] }
        tree.write("d/f", size: 3000)
        #expect(eventually { h.total == 3000 })
        tree.rename("d", "URLCACHE")
        let ok = eventually(timeout: 3) { h.total == 0 }
        #expect(ok, "after mv d URLCACHE: total \(h.total), files \(h.files); a fresh scan says 0")
    }

    /// An overflow while a directory rename is half-applied leaves the rebuilt total exact.
    @Test func overflowDuringADirectoryRenameKeepsTotalsExact() throws {
        let tree = TemporaryTree()
        tree.write("d/f1", size: 4000)
        tree.write("d/f2", size: 6000)
        tree.write("g", size: 1000)
        let engine = Engine(
            settings: WardenSettings(
                directories: [DirectorySettings(name: "c", path: tree.path)], sizeBasis: .apparent),
            mode: .observe, sinks: [], logger: Logger(label: "t"))
        let started: Result<Void, WardenError> = engine.queue.sync {
            do throws(WardenError) { try engine.start(); return .success(()) } catch { return .failure(error) }
        }
        try started.get()
        defer { _ = engine.queue.sync { engine.stop() } }
        #expect(engine.queue.sync { engine.state.ledger.total(RootID(0)) } == 11000)
        // Hold the real backend, rename on disk, and deliver what the kernel queue held when it overflowed right
        // after the IN_MOVED_FROM (its IN_MOVED_TO dropped).
        engine.queue.sync { engine.backend?.suspend() }
        tree.rename("d", "e")
        let total: Int64 = engine.queue.sync {
            let rootNode = engine.state.ledger.account(RootID(0))!.rootNode
            var batch = ChangeBatch()
            Array("d".utf8).withUnsafeBytes {
                batch.append(.movedFrom, node: rootNode, name: $0, isDirectory: true, move: MoveToken(raw: 77))
            }
            batch.append(.overflow, node: .none)
            _ = engine.process(&batch)
            return engine.state.ledger.total(RootID(0))
        }
        engine.queue.sync { engine.backend?.resume() }
        #expect(total == 11000, "after overflow rescan: \(total), disk 11000")
        // The records still queued for the real rename must not change the rebuilt total: once a marker written
        // after them is counted, they have all been read.
        tree.write("marker", size: 1)
        #expect(
            eventually { engine.queue.sync { engine.state.ledger.total(RootID(0)) } == 11001 },
            "later: \(engine.queue.sync { engine.state.ledger.total(RootID(0)) }), disk 11001")
    }
}

final class WatcherBox: @unchecked Sendable { var watcher: Watcher? }

@Suite struct SharedCallbackQueueTests {
    /// Two watchers sharing a callback queue; the first one's handler stops it (it used to crash).
    @Test func stopFromTheHandlerWithASharedCallbackQueue() throws {
        let a = TemporaryTree(), b = TemporaryTree()
        let q = DispatchQueue(label: "shared.callbacks")
        let boxA = WatcherBox()
        let stopped = DispatchSemaphore(value: 0)
        let wa = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "a", path: a.path)]), callbackQueue: q
        ) { e in
            if case .write = e.kind, let w = boxA.watcher { boxA.watcher = nil; w.stop(); stopped.signal() }
        }
        boxA.watcher = wa
        let wb = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "b", path: b.path)]), callbackQueue: q
        ) { _ in }
        try wa.start(); try wb.start()
        a.write("x", size: 10)
        #expect(stopped.wait(timeout: .now() + 5) == .success, "stop() from the handler never returned")
        wb.stop()
    }
}

@Suite struct HeldIdentifierTests {
    /// A pending move whose node was displaced and its slot reused never removes another directory.
    @Test func abandonedMoveOfADisplacedNodeRemovesAnUnrelatedDirectory() throws {
        let tree = TemporaryTree()
        tree.write("d/f1", size: 4000)
        tree.mkdir("p")
        let inotify = InotifyCapture()
        let engine = Engine(
            settings: WardenSettings(
                directories: [DirectorySettings(name: "c", path: tree.path)], sizeBasis: .apparent),
            mode: .observe, sinks: [], logger: Logger(label: "t"), backend: inotify.factory)
        let started: Result<Void, WardenError> = engine.queue.sync {
            do throws(WardenError) { try engine.start(); return .success(()) } catch { return .failure(error) }
        }
        try started.get()
        defer { _ = engine.queue.sync { engine.stop() } }
        engine.queue.sync { engine.backend?.suspend() }
        tree.rename("d", "p/d")
        tree.write("q/g", size: 2000)
        let (total, qWatched): (Int64, Bool) = engine.queue.sync {
            let root = RootID(0)
            let rootNode = engine.state.ledger.account(root)!.rootNode
            let p = Array("p".utf8).withUnsafeBytes { engine.state.ledger.subdirectory(of: rootNode, named: $0)! }
            var b1 = ChangeBatch()
            Array("d".utf8).withUnsafeBytes {
                b1.append(.movedFrom, node: rootNode, name: $0, isDirectory: true, move: MoveToken(raw: 5))
            }
            _ = engine.process(&b1)
            var b2 = ChangeBatch() // the fallback timer's re-read of p (or any scan that meets d's inode)
            b2.append(.rescan, node: p)
            _ = engine.process(&b2)
            var b3 = ChangeBatch()
            Array("q".utf8).withUnsafeBytes { b3.append(.created, node: rootNode, name: $0, isDirectory: true) }
            _ = engine.process(&b3)
            var b4 = ChangeBatch()
            b4.append(.moveAbandoned, node: .none, move: MoveToken(raw: 5))
            _ = engine.process(&b4)
            let q = Array("q".utf8).withUnsafeBytes { engine.state.ledger.subdirectory(of: rootNode, named: $0) }
            return (
                engine.state.ledger.total(root),
                q.map { engine.state.ledger.isWatched($0) && inotify.backend?.hasWatch($0) == true } ?? false
            )
        }
        #expect(total == 6000, "total \(total), disk 6000")
        #expect(qWatched, "q lost its node or its watch")
    }
}
