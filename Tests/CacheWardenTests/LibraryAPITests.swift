import Dispatch
import Foundation
import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import CacheWarden

/// The embedding API: callbacks on the caller's queue, async streams, queries, register/unregister, veto, errors.
@Suite struct LibraryAPITests {
    @Test func callbacksArriveOnTheGivenQueue() throws {
        let tree = TemporaryTree()
        let queue = DispatchQueue(label: "test.callbacks")
        let count = Atomic<Int>(0)
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "c", path: tree.path)]),
            callbackQueue: queue
        ) { _ in
            dispatchPrecondition(condition: .onQueue(queue))
            count.add(1, ordering: .relaxed)
        }
        try watcher.start()
        tree.write("x", size: 10)
        #expect(eventually { count.load(ordering: .relaxed) >= 2 }) // ready + write
        watcher.stop()
    }

    @Test func theAsyncStreamEndsWhenTheWatcherStops() async throws {
        let tree = TemporaryTree()
        let watcher = Watcher(settings: WardenSettings(directories: [DirectorySettings(name: "c", path: tree.path)]))
        try await watcher.start()
        let stream = watcher.events(buffering: .unbounded)
        // Moved in whole: one record, so the write event and the new total come in the same batch.
        let staging = TemporaryTree("cw-staging")
        staging.write("one", size: 10)
        #expect(Glibc.rename(staging.url("one"), tree.url("one")) == 0)
        #expect(eventually { watcher.totals().first?.files == 1 })
        watcher.stop()
        var names: [String] = []
        for await event in stream { names.append(event.name) } // finishes: the loop ends
        #expect(names.contains("write"))
        #expect(names.last == "stop")
    }

    @Test func stopIsIdempotentAndEmitsStopOnce() throws {
        let tree = TemporaryTree()
        let log = EventLog()
        let watcher = Watcher(settings: WardenSettings(directories: [DirectorySettings(name: "c", path: tree.path)])) {
            log.append($0)
        }
        try watcher.start()
        watcher.stop()
        watcher.stop()
        #expect(log.names.filter { $0 == "stop" }.count == 1)
        #expect(throws: WardenError.notRunning) { try watcher.trim("c", to: 0) }
    }

    @Test func registerAndUnregisterWhileRunning() throws {
        let a = TemporaryTree(), b = TemporaryTree()
        b.write("pre", size: 5000)
        let log = EventLog()
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "a", path: a.path)], sizeBasis: .apparent)
        ) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        try watcher.register(DirectorySettings(name: "b", path: b.path, quota: 8000))
        #expect(watcher.totals().map(\.dir) == ["a", "b"])
        #expect(watcher.totals()[1].total == 5000)
        b.write("more", size: 5000) // crosses b's quota → trim to 4000
        #expect(eventually { log.trims.contains { $0.dir == "b" } })
        #expect(throws: WardenError.duplicateDirectory("b")) {
            try watcher.register(DirectorySettings(name: "b", path: a.path + "/x"))
        }
        try watcher.unregister(name: "b")
        #expect(watcher.totals().map(\.dir) == ["a"])
        #expect(throws: WardenError.unknownDirectory("b")) { try watcher.unregister(name: "b") }
        // b is no longer watched: writing there is not seen, a still is.
        b.write("ignored", size: 100)
        a.write("seen", size: 100)
        #expect(eventually { watcher.totals()[0].total == 100 })
        #expect(!log.writes.contains { $0.file == "ignored" })
    }

    @Test func theVetoHookKeepsFilesAndTheTrimGoesOn() throws {
        let tree = TemporaryTree()
        for i in 0..<6 { tree.write("f\(i)", size: 1000, mtime: Double(1_000_000 + i)) }
        let asked = Mutex<[String]>([])
        let h = try WatcherHarness(tree, quota: 6500, basis: .apparent) { dir in
            dir.shouldEvict = { candidate in
                asked.withLock { $0.append(candidate.file) }
                return candidate.file != "f0" && candidate.file != "f2"
            }
        }
        tree.write("new", size: 1000) // 7000 > 6500 → target 3250
        #expect(eventually { !h.log.trims.isEmpty })
        #expect(tree.exists("f0"))
        #expect(tree.exists("f2"))
        #expect(h.log.evictions.map(\.file) == ["f1", "f3", "f4", "f5"])
        #expect(asked.withLock { $0 }.prefix(3) == ["f0", "f1", "f2"])
        #expect(h.total == 3000)
    }

    @Test func trimAndTotalsFromAnyThread() async throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("f\(i)", size: 1000, mtime: Double(1_000_000 + i)) }
        let h = try WatcherHarness(tree, basis: .apparent)
        let report = try await Task.detached { try h.watcher.trim("cache", to: 4000) }.value
        #expect(report.total == 4000)
        #expect(report.removed == 6)
        #expect(report.reason == .manual)
        #expect(h.watcher.totals()[0].total == 4000)
        #expect(!tree.exists("f5") && tree.exists("f6"))
    }

    @Test func aMissingPathIsATypedError() {
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "x", path: "/tmp/nope-\(getpid())-x")]))
        #expect(throws: WardenError.pathMissing("/tmp/nope-\(getpid())-x")) { try watcher.start() }
        let file = TemporaryTree()
        file.write("f", size: 1)
        let notDir = Watcher(settings: WardenSettings(directories: [DirectorySettings(name: "x", path: file.url("f"))]))
        #expect(throws: WardenError.notADirectory(file.url("f"))) { try notDir.start() }
        #expect(WardenError.pathMissing("/p").description == "/p does not exist: create it or fix the registered path")
    }

    @Test func anExhaustedWatchLimitIsATypedErrorThatSaysWhatToDo() throws {
        let tree = TemporaryTree()
        tree.mkdir("a/b")
        // Inject ENOSPC from inotify_add_watch for one subdirectory (the seam replaces the real call).
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "x", path: tree.path)]),
            mode: .enforce, callbackQueue: nil, logger: .init(label: "t"),
            backend: .inotify(addWatchOverride: { path in path.hasSuffix("/a/b") ? Errno.noSpace : nil }), handler: nil)
        do {
            try watcher.start()
            Issue.record("start succeeded")
        } catch {
            guard case .watchLimitReached(let path, let max) = error else {
                Issue.record("unexpected \(error)"); return
            }
            #expect(path.hasSuffix("/a/b"))
            #expect(max > 0)
            #expect(error.description.contains("fs.inotify.max_user_watches"))
            #expect(error.description.contains("not the disk"))
        }
    }

    @Test func theJSONOfAnEventIsAMethodOnTheEvent() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree)
        tree.write("a", size: 1)
        #expect(eventually { !h.log.writes.isEmpty })
        let lines = h.log.all.map { $0.jsonLine() }.joined()
        #expect(try parseWithPython(lines).prefix(2) == ["ready", "write"])
    }
}
