import Testing
@testable import CacheWarden

/// The library's `async` entry points and its event streams' buffering.
@Suite struct AsyncAPITests {
    @Test func asyncStartTrimClearAndReportRunOnTheWatchersQueue() async throws {
        let tree = TemporaryTree()
        for i in 0..<8 { tree.write("f\(i)", size: 1_000, mtime: 1_000_000 + Double(i)) }
        let settings = WardenSettings(
            directories: [DirectorySettings(name: "c", path: tree.path)], sizeBasis: .apparent)
        let reports = try await Watcher.report(settings)
        #expect(reports.map(\.totals.total) == [8_000])
        let watcher = Watcher(settings: settings)
        try await watcher.start()
        let trim = try await watcher.trim("c", to: 5_000)
        #expect(trim.removed == 3 && trim.total == 5_000)
        #expect(!tree.exists("f0") && !tree.exists("f2") && tree.exists("f3"))
        let clear = try await watcher.clear(["c"])
        #expect(clear.removed == 5 && clear.freed == 5_000)
        await #expect(throws: WardenError.unknownDirectory("nope")) { try await watcher.trim("nope", to: 0) }
        watcher.stop()
    }

    /// A bounded stream that fills keeps the oldest events, counts the ones it drops, and says so with a
    /// `dropped` event before the next event it has room for.
    @Test func aBoundedStreamNeverDropsSilently() async {
        let sink = StreamSink()
        let stream = sink.makeStream(buffering: .bounded(3))
        func issue(_ n: Int) -> WardenEvent { WardenEvent(.error(WardenIssue(message: "e\(n)"))) }
        sink.receive((0..<10).map(issue)) // 3 wait, 7 are dropped
        var iterator = stream.makeAsyncIterator()
        var seen: [String] = []
        for _ in 0..<3 { if let e = await iterator.next(), case .error(let i) = e.kind { seen.append(i.message) } }
        #expect(seen == ["e0", "e1", "e2"])
        sink.receive([issue(10)])
        sink.finish()
        var rest: [WardenEvent.Kind] = []
        while let e = await iterator.next() { rest.append(e.kind) }
        guard rest.count == 2, case .dropped(let count) = rest[0], case .error(let last) = rest[1] else {
            Issue.record("expected dropped then e10, got \(rest)")
            return
        }
        #expect(count == 7 && last.message == "e10")
    }
}
