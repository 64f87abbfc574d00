import Foundation
import Glibc
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// `events_to = journal`: every event reaches journald's native socket as a record with fields. Tested against a
/// listener that parses the protocol (`JournalListener`); the real journald is tried too where one runs.
@Suite struct JournalTests {
    private func daemon(_ tree: TemporaryTree, eventsTo: String, socket: String) throws -> RunningCLI {
        tree.mkdir("cache")
        let config = tree.url("cw.conf")
        try
            "events_to = \(eventsTo)\ndir.cache.path = cache\ndir.cache.quota = 100KB\ndir.cache.trim_to = 90%\ndir.cache.spare_open = false\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        return try RunningCLI(["run", "-c", config], environment: ["CACHEWARDEN_JOURNAL_SOCKET": socket])
    }

    @Test func aTrimAndANewlineInAPathReachTheJournalAsFieldsAndStdoutStaysQuiet() throws {
        let tree = TemporaryTree()
        let listener = try JournalListener(path: tree.url("journal.sock"))
        let cli = try daemon(tree, eventsTo: "journal", socket: listener.path)
        #expect(eventually { !listener.events("ready").isEmpty }, "no ready record: \(cli.stderr)")
        let ready = try #require(listener.events("ready").first)
        #expect(
            ready["CACHEWARDEN_DIR"] == "cache" && ready["CACHEWARDEN_PATH"] == tree.url("cache"), "\(ready.fields)")
        #expect(ready["SYSLOG_IDENTIFIER"] == "cachewarden" && ready["PRIORITY"] == "6")

        tree.write("cache/old\nfile", size: 40_000, mtime: Date().timeIntervalSince1970 - 3600)
        #expect(eventually { !listener.events("write").isEmpty })
        tree.write("cache/new", size: 70_000) // 112 KiB > 100 KB: the trim to 90 KB takes the older file alone
        #expect(eventually { !listener.events("trim").isEmpty }, "no trim: \(listener.records.map(\.fields))")

        let write = try #require(listener.events("write").first)
        #expect(
            write["CACHEWARDEN_FILE"] == "old\nfile" && write.binary == ["MESSAGE", "CACHEWARDEN_FILE"],
            "\(write.fields)")
        #expect(write["PRIORITY"] == "7" && write["MESSAGE"]?.hasPrefix("cache: wrote old\nfile (") == true)
        let evict = try #require(listener.events("evict").first)
        #expect(evict["CACHEWARDEN_FILE"] == "old\nfile" && evict["CACHEWARDEN_REASON"] == "quota", "\(evict.fields)")
        #expect(evict.binary.contains("MESSAGE") && evict.binary.contains("CACHEWARDEN_FILE"))
        let trim = try #require(listener.events("trim").first)
        #expect(
            trim["CACHEWARDEN_DIR"] == "cache" && trim["CACHEWARDEN_REASON"] == "quota"
                && trim["CACHEWARDEN_REMOVED"] == "1")
        #expect(
            trim["PRIORITY"] == "5"
                && trim["MESSAGE"]?.hasPrefix("cache: trim (quota) removed 1 files, freed ") == true,
            "\(trim.fields)")
        #expect(trim["CACHEWARDEN_TIME"]?.hasSuffix("Z") == true && trim.binary.isEmpty)

        #expect(cli.interrupt() == 0)
        #expect(!listener.events("stop").isEmpty, "the stop record is sent before the exit")
        #expect(!cli.stdout.contains("\"event\""), "events_to = journal printed events: \(cli.stdout)")
    }

    @Test func bothSendsEveryEventToEach() throws {
        let tree = TemporaryTree()
        let listener = try JournalListener(path: tree.url("journal.sock"))
        let cli = try daemon(tree, eventsTo: "both", socket: listener.path)
        #expect(
            eventually { !listener.events("ready").isEmpty && cli.stdout.contains("\"event\":\"ready\"") },
            "\(cli.stderr)")
        #expect(cli.interrupt() == 0)
    }

    @Test func withoutAJournalSocketEventsFallBackToStdout() throws {
        let tree = TemporaryTree()
        let cli = try daemon(tree, eventsTo: "journal", socket: tree.url("absent.sock"))
        #expect(eventually { cli.stdout.contains("\"event\":\"ready\"") }, "\(cli.stderr)")
        #expect(cli.stderr.contains("is not a socket (no journald); events go to stdout instead"), "\(cli.stderr)")
        #expect(cli.interrupt() == 0)
    }

    /// A record larger than one datagram (here a 4 KB send buffer, a 64 KB message) goes as a sealed memfd.
    @Test func aRecordTooLargeForADatagramGoesThroughASealedMemfd() throws {
        let tree = TemporaryTree()
        let listener = try JournalListener(path: tree.url("journal.sock"))
        let sink = try JournalSink(socket: listener.path, sendBuffer: 4096)
        let long = String(repeating: "x", count: 65_536) + "\nend"
        sink.receive([
            WardenEvent(.error(WardenIssue(message: long, dir: "cache", kind: "test"))),
            WardenEvent(.dropped(count: 3)),
        ])
        sink.finish()
        #expect(eventually { listener.records.count == 2 }, "\(listener.records.count) records")
        let error = try #require(listener.events("error").first)
        #expect(error.viaMemfd && error["CACHEWARDEN_MESSAGE"] == long && error["PRIORITY"] == "3")
        let dropped = try #require(listener.events("dropped").first)
        #expect(!dropped.viaMemfd && dropped["CACHEWARDEN_COUNT"] == "3" && dropped["PRIORITY"] == "4")
    }

    /// Fields follow the JSON line key for key: nested objects prefixed, arrays as a repeated field.
    @Test func fieldsMirrorTheJSONLine() throws {
        var t = TrimReport(
            dir: "npm", reason: .quota, removed: 2, freed: 4096, totalBefore: 9000, total: 4904,
            quota: 8000, target: 4000, durationMilliseconds: 1.5, shortBy: 904, dryRun: false)
        t.spared = SparedFiles(protected: 1, inUse: 2)
        let trim = JournalListener.Record(bytes: JournalRecord(WardenEvent(.trim(t))).bytes, viaMemfd: false)
        #expect(trim["CACHEWARDEN_SPARED_IN_USE"] == "2" && trim["CACHEWARDEN_SHORT_BY"] == "904")
        #expect(trim["CACHEWARDEN_DURATION_MS"] == "1.5" && trim["PRIORITY"] == "4", "short of its target: a warning")
        let names = Set(trim.fields.map(\.name))
        #expect(names.allSatisfy { $0.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" } && !$0.hasPrefix("_") })
        let low = LowDiskReport(mount: "/", free: 1, size: 10, threshold: 2, dirs: ["npm", "pip"])
        let record = JournalListener.Record(bytes: JournalRecord(WardenEvent(.lowDisk(low))).bytes, viaMemfd: false)
        #expect(record.all("CACHEWARDEN_DIRS") == ["npm", "pip"] && record["PRIORITY"] == "4")
    }

    /// A socket file nothing receives at (what a stopped journald leaves) is told apart at once from a journald:
    /// `events_to = journal` falls back to stdout and says why, instead of sending every record into a refusal.
    @Test func aStaleJournalSocketIsToldApartAtOnce() throws {
        let tree = TemporaryTree()
        let stale = tree.url("stale.sock")
        do {
            let socket = try UnixSocket.make(Int32(SOCK_DGRAM.rawValue))
            try UnixSocket.bind(socket.fd, stale)
        } // closed as its owner goes: the file stays, nothing behind it
        let start = Date()
        guard case .refused(let error) = JournalSink.listener(at: stale) else {
            Issue.record("a stale socket taken for a listener"); return
        }
        #expect(error == .connectionRefused && Date().timeIntervalSince(start) < 1)
        #expect(JournalSink.listener(at: tree.url("absent.sock")) == .notASocket)

        let cli = try daemon(tree, eventsTo: "journal", socket: stale)
        #expect(eventually { cli.stdout.contains("\"event\":\"ready\"") }, "\(cli.stderr)")
        #expect(
            cli.stderr.contains("but nothing receives at \(stale)")
                && cli.stderr.contains("events go to stdout instead"),
            "\(cli.stderr)")
        #expect(cli.interrupt() == 0)
    }

    /// `events_to = journal` against the real systemd-journald (the running one, or one started for the test and
    /// stopped after): the daemon's records are read back with `journalctl -o json`, field by field.
    @Test(
        .enabled(if: Journald.unavailable == nil, "needs journalctl and a journald: one running, or root to start one"))
    func theRealJournaldStoresTheFields() throws {
        let journald = try Journald()
        defer { journald.stop() }
        let tree = TemporaryTree()
        let name = "j\(getpid())x\(UInt32.random(in: 0...UInt32.max))"
        tree.mkdir("cache")
        let config = tree.url("cw.conf")
        try
            "events_to = journal\ndir.\(name).path = cache\ndir.\(name).quota = 100KB\ndir.\(name).trim_to = 90%\ndir.\(name).spare_open = false\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let cli = try RunningCLI(["run", "-c", config], environment: ["CACHEWARDEN_JOURNAL_SOCKET": nil])
        func records(_ event: String) -> [[String: [String]]] {
            ((try? Journald.records("CACHEWARDEN_DIR=\(name)")) ?? []).filter { $0["CACHEWARDEN_EVENT"] == [event] }
        }
        #expect(eventually { !records("ready").isEmpty }, "no ready record in the journal: \(cli.stderr)")
        tree.write("cache/old\nfile", size: 40_000, mtime: Date().timeIntervalSince1970 - 3600)
        tree.write("cache/new", size: 70_000) // over 100 KB: the trim to 90 KB takes the older file
        #expect(eventually { !records("trim").isEmpty }, "no trim record: \(cli.stderr)")
        #expect(cli.interrupt() == 0)
        #expect(eventually { !records("stop").isEmpty }, "the stop record is sent before the exit")

        let ready = try #require(records("ready").first)
        #expect(ready["CACHEWARDEN_PATH"] == [tree.url("cache")] && ready["SYSLOG_IDENTIFIER"] == ["cachewarden"])
        #expect(ready["PRIORITY"] == ["6"] && ready["_PID"] == ["\(cli.process.processIdentifier)"], "\(ready)")
        let evict = try #require(records("evict").first)
        #expect(evict["CACHEWARDEN_FILE"] == ["old\nfile"] && evict["CACHEWARDEN_REASON"] == ["quota"], "\(evict)")
        let trim = try #require(records("trim").first)
        #expect(trim["CACHEWARDEN_REMOVED"] == ["1"] && trim["PRIORITY"] == ["5"], "\(trim)")
        #expect(trim["MESSAGE"]?.first?.hasPrefix("\(name): trim (quota) removed 1 files, freed ") == true, "\(trim)")
        #expect(!cli.stdout.contains("\"event\""), "events_to = journal printed events: \(cli.stdout)")
    }
}
