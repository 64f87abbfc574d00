import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// The control socket with real Unix sockets: a watcher on a real folder, its `ControlServer`, and clients that
/// connect, send lines and read replies parsed by Foundation's JSON reader.
/// A started watcher on one tree with a control server on a socket inside the tree.
final class SocketDaemon: Sendable {
    let tree: TemporaryTree
    let watcher: Watcher
    let server: ControlServer
    let log = EventLog()
    let reloads = SharedCount()

    /// `onReload` runs in each reload request, before it answers `reloadResult`.
    init(
        _ tree: TemporaryTree, quota: Int64 = 0, maxQueued: Int = ControlServer.maxQueuedPerSubscriber,
        maxConnections: Int = ControlServer.maxConnections, idleTimeout: Double = ControlServer.idleTimeout,
        reloadResult: String? = nil, onReload: @escaping @Sendable () -> Void = {}
    ) throws {
        self.tree = tree
        tree.mkdir("cache")
        server = ControlServer(
            path: tree.url("cw.sock"), mode: 0o600, maxQueued: maxQueued, maxConnections: maxConnections,
            idleTimeout: idleTimeout)
        let dir = DirectorySettings(name: "cache", path: tree.url("cache"), quota: quota)
        let log = self.log
        watcher = Watcher(settings: WardenSettings(directories: [dir]), sinks: [server]) { log.append($0) }
        try server.listen()
        try watcher.start()
        let reloads = self.reloads
        server.serve(watcher: watcher) {
            reloads.add()
            onReload()
            return reloadResult
        }
    }

    deinit { watcher.stop() }

    func client() throws -> ControlClient { try #require(try ControlClient(path: server.path, timeout: 10)) }
}

/// Whether a write another thread does has ended, and how.
final class SentFlag: Sendable {
    private let state = Mutex<Bool?>(nil)
    func set(_ ok: Bool) { state.withLock { $0 = ok } }
    var value: Bool? { state.withLock { $0 } }
}

/// A count several threads add to.
final class SharedCount: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

@Suite struct ControlSocketTests {
    @Test func statusReplyIsTheLedgerFromMemoryWithEveryField() throws {
        let tree = TemporaryTree()
        for i in 0..<20 { tree.write("cache/d\(i % 3)/f\(i)", size: 5000 + i) }
        let daemon = try SocketDaemon(tree, quota: 10_000_000)
        let status = try daemon.client().status()
        let disk = diskTotals(tree.url("cache"))
        let dir = try #require(status.dirs.first)
        #expect(status.version == CacheWardenVersion.current)
        #expect(dir.totals.total == disk.total && dir.totals.files == disk.files)
        #expect(dir.totals.quota == 10_000_000 && dir.trimTarget == 5_000_000)
        #expect(dir.watches == 4, "the root and d0, d1, d2")
        #expect(dir.oldest != nil && dir.filesystemFree != nil)
        // The same report as the library's (ages travel in whole seconds; free space moves on its own).
        var local = try #require(daemon.watcher.status().first)
        local.oldest = dir.oldest
        local.filesystemFree = dir.filesystemFree
        #expect(dir == local)
    }

    @Test func everyRequestIsAnsweredWithOkOrAnErrorSayingWhatToFix() throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("cache/f\(i)", size: 10_000, mtime: 1_700_000_000 + Double(i)) }
        let daemon = try SocketDaemon(tree, reloadResult: "reload failed: cachewarden.conf:3: unknown key")
        let c = try daemon.client()
        let version = try c.request(["command": "version"])
        #expect(version["ok"]?.bool == true && version["version"]?.string == CacheWardenVersion.current)
        #expect(version["commands"]?.strings?.contains("subscribe") == true)

        let noTarget = try c.request(["command": "trim", "dir": "cache"])
        #expect(noTarget["ok"]?.bool == false && (noTarget["error"]?.string ?? "").contains("no quota"))
        let unknown = try c.request(["command": "trim", "dir": "nope", "to": "1MB"])
        #expect(unknown["ok"]?.bool == false && (unknown["error"]?.string ?? "").contains("nope"))

        let dry = try c.clear(["cache"], dryRun: true)
        #expect(dry["removed"]?.integer == 10 && dry["dry_run"]?.bool == true)
        #expect(diskTotals(tree.url("cache")).files == 10, "a dry run deleted files")

        let perFile = diskTotals(tree.url("cache")).total / 10
        let trim = try c.trim("cache", to: "\(perFile * 5)")
        #expect(trim["removed"]?.integer == 5 && trim["reason"]?.string == "manual")
        #expect(!tree.exists("cache/f0") && tree.exists("cache/f9"), "oldest first")

        let reload = try c.request(["command": "reload"])
        #expect(reload["ok"]?.bool == false && (reload["error"]?.string ?? "").contains("cachewarden.conf:3"))
        #expect(daemon.reloads.count == 1)

        let cleared = try c.clear([], dryRun: false)
        #expect(cleared["removed"]?.integer == 5)
        #expect(diskTotals(tree.url("cache")).files == 0)
        #expect(try c.status().dirs.first?.totals.total == diskTotals(tree.url("cache")).total)
    }

    @Test func malformedRequestsGetErrorRepliesAndTheServerKeepsServing() throws {
        let tree = TemporaryTree()
        tree.write("cache/a", size: 4096)
        let daemon = try SocketDaemon(tree)
        let c = try daemon.client()
        let bad: [(String, String)] = [
            ("not json at all", "not a JSON object"), ("[1,2,3]", "not a JSON object"), ("{}", "no \"command\""),
            (#"{"command":"explode"}"#, "unknown command"), (#"{"command":"trim"}"#, "needs \"dir\""),
            (#"{"command":"trim","dir":"cache","to":"lots"}"#, "bad \"to\""),
            (#"{"command":"clear","dirs":"cache"}"#, "bad \"dirs\""),
            (#"{"command":"clear","dry_run":"yes"}"#, "bad \"dry_run\""),
            (#"{"command":"subscribe","events":["trim","boom"]}"#, "unknown event boom"),
            ("\u{1}\u{2}\u{ff}", "not a JSON object"),
        ]
        for (line, complaint) in bad {
            try c.sendRaw(Array((line + "\n").utf8))
            let reply = try #require(
                try c.readLine().flatMap { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] })
            #expect(reply["ok"] as? Bool == false, "\(line)")
            #expect((reply["error"] as? String ?? "").contains(complaint), "\(line): \(reply)")
        }
        // An error about a known request names it, as every reply does.
        try c.sendRaw(Array(#"{"command":"trim","dir":"cache","to":-1}"#.utf8) + [10])
        let named = try #require(
            try c.readLine().flatMap { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] })
        #expect(
            named["command"] as? String == "trim" && (named["error"] as? String ?? "").contains("bad \"to\" -1"),
            "\(named)")
        #expect(daemon.log.all.allSatisfy { $0.name != "evict" })
    }

    /// Replies leave in the order of the requests, error replies and the subscription's acknowledgement too (they
    /// jumped ahead: `version, bogus, status, trim, version` came back as `E V S T V`); an empty or blank line gets
    /// an error reply (it got none).
    @Test func repliesComeInTheOrderOfTheRequestsErrorsAndEmptyLinesIncluded() throws {
        let tree = TemporaryTree()
        tree.write("cache/a", size: 4096)
        let daemon = try SocketDaemon(tree)
        let c = try daemon.client()
        let requests = [
            #"{"command":"version"}"#, "bogus", #"{"command":"status"}"#, #"{"command":"trim","dir":"cache"}"#, "",
            #"{"command":"version"}"#, #"{"command":"subscribe","events":["trim"]}"#, " \t\r", #"{"command":"status"}"#,
        ]
        try c.sendRaw(Array((requests.joined(separator: "\n") + "\n").utf8))
        var replies: [[String: Any]] = []
        for _ in requests {
            replies.append(
                try #require(
                    try c.readLine().flatMap { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }))
        }
        #expect(
            replies.map { $0["command"] as? String ?? "-" } == [
                "version", "-", "status", "trim", "-", "version", "subscribe", "-", "status",
            ],
            "\(replies)")
        #expect(
            replies.map { $0["ok"] as? Bool == true } == [true, false, true, false, false, true, true, false, true])
        for blank in [replies[4], replies[7]] {
            #expect((blank["error"] as? String ?? "").contains("empty request line"), "\(blank)")
        }
    }

    /// `{"command":"status","command":"clear"}` once ran a clear: a key twice is refused with a reply naming it,
    /// and nothing runs.
    @Test func aRequestWithAKeyTwiceIsRefusedAndNothingRuns() throws {
        let tree = TemporaryTree()
        for i in 0..<5 { tree.write("cache/f\(i)", size: 4096) }
        let daemon = try SocketDaemon(tree)
        let c = try daemon.client()
        let lines = [
            #"{"command":"status","command":"clear"}"#, #"{"command":"clear","dirs":["nope"],"dirs":[]}"#,
            #"{"command":"clear","dry_run":true,"dry_run":false}"#,
        ]
        for (line, key) in zip(lines, ["command", "dirs", "dry_run"]) {
            try c.sendRaw(Array((line + "\n").utf8))
            let reply = try #require(
                try c.readLine().flatMap { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] })
            #expect(reply["ok"] as? Bool == false, "\(line)")
            #expect((reply["error"] as? String ?? "").contains("duplicate key \"\(key)\""), "\(line): \(reply)")
        }
        #expect(try c.status().dirs.first?.totals.files == 5)
        #expect(diskTotals(tree.url("cache")).files == 5, "a refused request deleted files")
        #expect(daemon.log.all.allSatisfy { $0.name != "clear" && $0.name != "evict" })
    }

    @Test func aTenMegabyteRequestGetsAnErrorNamingTheLimitWhileOthersAreServed() throws {
        let tree = TemporaryTree()
        tree.write("cache/a", size: 4096)
        let daemon = try SocketDaemon(tree)
        let other = try daemon.client()
        // Used by the writer thread, then by this test once the flag says the writer is done.
        nonisolated(unsafe) let flood = try daemon.client()
        // The flood is written from a thread of its own: the write blocks until the daemon has read it all.
        // Half is sent, the other client is served, then the rest: the daemon serves others mid-flood.
        let sent = SentFlag(), halfway = DispatchSemaphore(value: 0), goOn = DispatchSemaphore(value: 0)
        let half = [UInt8](repeating: UInt8(ascii: "x"), count: 5 << 20)
        Thread {
            let first = (try? flood.sendRaw(half)) != nil
            halfway.signal()
            goOn.wait()
            sent.set(first && (try? flood.sendRaw(half)) != nil)
        }.start()
        #expect(halfway.wait(timeout: .now() + 20) == .success, "the first 5 MB were not read")
        #expect(try other.status().dirs.first?.totals.files == 1)
        goOn.signal()
        #expect(eventually { sent.value == true }, "the 10 MB were not all read")
        let refusal = try #require(try flood.readLine())
        let reply = try #require(try JSONSerialization.jsonObject(with: Data(refusal)) as? [String: Any])
        #expect(
            reply["ok"] as? Bool == false
                && (reply["error"] as? String ?? "").contains("limit of 65536 bytes (64 KiB)"), "\(reply)")
        #expect(try flood.readLine() == nil, "the connection ends after the reply")
        #expect(try other.status().dirs.first?.totals.files == 1)
    }

    @Test func aSubscriberReceivesTheLiveLinesItAskedFor() throws {
        let tree = TemporaryTree()
        let daemon = try SocketDaemon(tree, quota: 400_000)
        let c = try daemon.client()
        try c.subscribe(["trim", "evict"])
        for i in 0..<12 { tree.write("cache/f\(i)", size: 50_000) }
        var names: [String] = []
        while !names.contains("trim"), let line = try c.readLine() {
            let event = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            names.append(event["event"] as? String ?? "?")
        }
        #expect(names.contains("evict") && names.allSatisfy { $0 == "evict" || $0 == "trim" }, "\(names)")
        // The same evictions the watcher's own handler got (which runs on a queue of its own, maybe later).
        #expect(eventually { names.filter { $0 == "evict" }.count == daemon.log.evictions.count })
    }

    @Test func aSubscriberThatStopsReadingIsCutOffWithANoteWhileTheWatcherGoesOn() throws {
        let tree = TemporaryTree()
        let daemon = try SocketDaemon(tree, maxQueued: 64 * 1024)
        let slow = try daemon.client()
        try slow.subscribe([])
        // Far more lines than the bound plus the kernel's socket buffers.
        for i in 0..<6000 { tree.write("cache/d\(i % 10)/file-with-a-long-name-\(i)", size: 1) }
        #expect(eventually { Set(daemon.log.writes.map(\.file)).count == 6000 })
        #expect(try daemon.client().status().dirs.first?.totals.files == 6000, "the watcher kept counting")
        var lines = 0
        var note: [String: Any]?
        while let line = try slow.readLine() {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], "a broken line")
            if object["ok"] as? Bool == false { note = object } else { lines += 1 }
        }
        let message = note.flatMap { $0["error"] as? String } ?? ""
        #expect(message.contains("too slow"), "no note: \(lines) lines")
        #expect(lines < 6000)
    }

    /// A client that sends no complete request for the idle timeout (here 0.5 s) gets a note and is disconnected,
    /// half a line or nothing at all; one waiting for a reply, or subscribed, is not idle however long it waits.
    @Test func anIdleClientIsDisconnectedButNotOneWaitingForAReplyOrSubscribed() throws {
        let tree = TemporaryTree()
        let release = DispatchSemaphore(value: 0)
        let daemon = try SocketDaemon(tree, idleTimeout: 0.5, onReload: { release.wait() })
        let subscriber = try daemon.client()
        try subscriber.subscribe(["write"])
        let waiting = try daemon.client()
        try waiting.send(["command": "reload"]) // answered once released
        // Two rounds: the subscriber and the waiting client outlive two idle timeouts.
        for _ in 0..<2 {
            let silent = try daemon.client(), partial = try daemon.client()
            try partial.sendRaw(Array(#"{"command":"#.utf8))
            for c in [silent, partial] {
                let note = try #require(
                    try c.readLine().flatMap { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] })
                #expect(
                    note["ok"] as? Bool == false && (note["error"] as? String ?? "").contains("no request for 0.5 s"),
                    "\(note)")
                #expect(try c.readLine() == nil, "still connected after the note")
            }
        }
        release.signal()
        let reload = try #require(try waiting.readLine().flatMap { try JSONValue(parsing: $0).object })
        #expect(reload["command"]?.string == "reload" && reload["ok"]?.bool == true)
        tree.write("cache/f", size: 1000)
        let event = try #require(try subscriber.readLine().flatMap { try JSONValue(parsing: $0).object })
        #expect(event["event"]?.string == "write", "\(event)")
    }

    /// A client beyond the limit (here 3 connected) gets an error reply and is disconnected; once a client leaves,
    /// a new one is served.
    @Test func aClientBeyondTheLimitIsTurnedAwayWithAReply() throws {
        let tree = TemporaryTree()
        let daemon = try SocketDaemon(tree, maxConnections: 3)
        var clients = try (0..<3).map { _ in try daemon.client() }
        for c in clients { #expect(try c.request(["command": "version"])["ok"]?.bool == true) }
        let extra = try daemon.client()
        let note = try #require(try extra.readLine().flatMap { try JSONValue(parsing: $0).object })
        #expect(
            note["ok"]?.bool == false && note["error"]?.string?.contains("too many clients: 3 are connected") == true,
            "\(note)")
        #expect(try extra.readLine() == nil)
        for c in clients {
            #expect(try c.request(["command": "version"])["ok"]?.bool == true, "a connected client lost")
        }
        clients.removeFirst()
        #expect(eventually { (try? daemon.client().request(["command": "version"]))?["ok"]?.bool == true })
    }

    @Test func aHundredClientsComingAndGoingDoNotDisturbTrimming() async throws {
        let tree = TemporaryTree()
        let daemon = try SocketDaemon(tree, quota: 1_000_000)
        let path = daemon.server.path
        let writer = Task.detached {
            for i in 0..<400 { tree.write("cache/w\(i)", size: 40_000) }
        }
        let answered = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<100 {
                group.addTask {
                    guard let c = try? ControlClient(path: path, timeout: 20) else { return false }
                    if i % 4 == 3 { return true } // connects and leaves without a word
                    return (try? c.status().dirs.count) == 1
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        await writer.value
        #expect(answered == 100)
        #expect(eventually { diskTotals(tree.url("cache")).total <= 1_000_000 })
        #expect(
            !daemon.log.trims.isEmpty && daemon.log.trims.allSatisfy { $0.total <= $0.target }, "\(daemon.log.trims)")
        #expect(eventually { daemon.watcher.totals().first?.total == diskTotals(tree.url("cache")).total })
    }
}
