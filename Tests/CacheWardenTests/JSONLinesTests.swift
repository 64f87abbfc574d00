import Foundation
import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// Every line is one JSON object that real parsers accept, whatever the file names.
@Suite struct JSONLinesTests {
    static let hostileNames = [
        "with space", "quote\"in", "back\\slash", "new\nline", "tab\tand\u{1}ctl",
        "emoji-😀", "del\u{7f}", "uni\u{2028}sep",
    ]

    @Test func hostileStringsEncodeAsValidJSON() throws {
        var text = ""
        for name in Self.hostileNames {
            let e = WardenEvent(.write(FileWritten(dir: "d", file: name, size: 1, total: 2, files: 3, quota: 4)))
            text += e.jsonLine()
        }
        let names = try parseWithPython(text)
        #expect(names == Array(repeating: "write", count: Self.hostileNames.count))
        // Round trip through Foundation's parser too: the decoded file name is the original.
        for (line, name) in zip(text.split(separator: "\n"), Self.hostileNames) {
            let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            #expect(obj["file"] as? String == name)
        }
    }

    @Test func invalidUTF8InAFileNameBecomesReplacementCharacters() throws {
        let raw: [UInt8] = [0x62, 0x61, 0x64, 0xff, 0xfe, 0x2e, 0x62, 0x69, 0x6e]
        let name = PathBytes.display(raw)
        #expect(name == "bad\u{fffd}\u{fffd}.bin")
        let line = WardenEvent(.evict(Eviction(dir: "d", file: name, size: 1, reason: .quota, dryRun: false)))
            .jsonLine()
        #expect(try parseWithPython(line) == ["evict"])
    }

    @Test func everyEventKindIsOneParsableLine() throws {
        let kinds: [WardenEvent.Kind] = [
            .ready(DirectoryTotals(dir: "d", path: "/p", total: 1, files: 1, quota: 0)),
            .trim(
                TrimReport(
                    dir: "d", reason: .quota, removed: 1, freed: 2, totalBefore: 3, total: 1, quota: 4, target: 2,
                    durationMilliseconds: 0.125, shortBy: 0, dryRun: false)),
            .status(DirectoryTotals(dir: "d", path: "/p", total: 1, files: 1, quota: 0)),
            .stop(DirectoryTotals(dir: "d", path: "/p", total: 1, files: 1, quota: 0)),
            .overflow, .rescan(RescanReport(dir: "d", drift: -5, total: 1, files: 1)),
            .lowDisk(
                LowDiskReport(
                    mount: "/", free: 1, size: 2, threshold: 3, dirs: ["d"], bytesPerSecond: 1.5, secondsToFull: nil)),
            .clear(ClearProgress(phase: .done, progress: 1, freed: 5, removed: 1, dirs: ["d"], dryRun: false)),
            .dropped(count: 3), .error(WardenIssue(message: "x\ny", dir: nil, file: nil, kind: "k")),
        ]
        let text = kinds.map { WardenEvent($0).jsonLine() }.joined()
        #expect(text.split(separator: "\n").count == kinds.count)
        #expect(
            try parseWithPython(text) == [
                "ready", "trim", "status", "stop", "overflow", "rescan", "low_disk", "clear", "dropped", "error",
            ])
    }

    @Test func anEventIsNoLargerThanAWriteOrAnEvictWithItsTime() {
        // A trim holds one `evict` event per file until the sinks have them: the rare large reports are boxed.
        let largestFrequent = max(
            MemoryLayout<FileWritten>.size, MemoryLayout<Eviction>.size, MemoryLayout<DirectoryTotals>.size)
        #expect(MemoryLayout<WardenEvent.Kind>.size <= largestFrequent + 1)
        #expect(MemoryLayout<TrimReport>.size > largestFrequent)
    }

    @Test func timeIsRFC3339UTCWithMilliseconds() {
        let line = WardenEvent(.overflow, time: Date(timeIntervalSince1970: 1_700_000_000.1234)).jsonLine()
        #expect(line.contains("\"time\":\"2023-11-14T22:13:20.123Z\""))
    }

    @Test func timeMatchesFoundationsISO8601FormatterOverRandomInstants() {
        let reference = ISO8601DateFormatter()
        reference.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        reference.timeZone = TimeZone(identifier: "UTC")
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            // Whole milliseconds plus 0.4 ms: truncating (ours) and rounding (Foundation's) then agree.
            let t = Double(Int64.random(in: 0..<4_102_444_800_000, using: &rng)) / 1000 + 0.0004
            #expect(RFC3339.format(secondsSince1970: t) == reference.string(from: Date(timeIntervalSince1970: t)))
        }
    }

    @Test(.enabled(if: which("jq") != nil, "needs jq"))
    func jqAcceptsTheLines() throws {
        let jq = try #require(which("jq"))
        let text = Self.hostileNames.map {
            WardenEvent(.write(FileWritten(dir: "d", file: $0, size: 1, total: 2, files: 3, quota: 4))).jsonLine()
        }.joined()
        let r = try runProcess(jq, ["-c", ".file"], stdin: text)
        #expect(r.status == 0)
        #expect(r.out.split(separator: "\n").count == Self.hostileNames.count)
    }
}
