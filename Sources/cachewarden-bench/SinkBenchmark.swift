import CacheWarden
import CacheWardenFilesystem
import Dispatch
import Foundation
import Glibc
import SystemPackage

/// JSON-lines throughput (benchmark 5).
struct SinkResult: Sendable {
    var lines: Int
    var bytes: Int
    var writes: Int
    var seconds: Double
    /// Distinct real `write` events replayed (captured from a watcher).
    var samples: Int
    /// The same fields through `JSONSerialization` (the Foundation way), lines and seconds.
    var peerLines: Int
    var peerSeconds: Double
    var note: String?

    var linesPerSecond: Double { seconds > 0 ? Double(lines) / seconds : 0 }
    var peerLinesPerSecond: Double { peerSeconds > 0 ? Double(peerLines) / peerSeconds : 0 }
}

/// 5 (JSON sink): `WardenEvent.jsonLineBytes()` of `write` events, batched up to 64 KiB per `write(2)` to
/// /dev/null. The events are real ones, captured from a watcher (the library has no public initializer for them);
/// beside it, the same fields encoded with `JSONSerialization`.
enum SinkBenchmark {
    static func run(lines: Int, work: String, log: (String) -> Void) throws -> SinkResult {
        let samples = try captureWriteEvents(count: 256, work: work)
        var note: String?
        var events = samples
        if events.isEmpty {
            note = "no write events captured: error events used instead"
            events = [
                WardenEvent(.error(WardenIssue(message: "sample", dir: "bench", file: "w0/f0.bin", kind: "bench")))
            ]
        }
        guard let null = try? OwnedDescriptor.opening({ open("/dev/null", O_WRONLY | O_CLOEXEC) }) else {
            throw BenchError("cannot open /dev/null")
        }
        // Open until both measurements are done: `fd` alone does not keep its owner alive.
        defer { withExtendedLifetime(null) {} }
        let fd = null.fd

        var buffer: [UInt8] = []
        buffer.reserveCapacity(64 * 1024)
        var bytes = 0
        var writes = 0
        let start = Clock.nanos()
        for i in 0..<lines {
            let line = events[i % events.count].jsonLineBytes()
            if buffer.count + line.count > 64 * 1024 {
                buffer.withUnsafeBytes { _ = Files.writeAll(fd, $0) }
                writes += 1
                buffer.removeAll(keepingCapacity: true)
            }
            buffer.append(contentsOf: line)
            bytes += line.count
        }
        if !buffer.isEmpty {
            buffer.withUnsafeBytes { _ = Files.writeAll(fd, $0) }
            writes += 1
        }
        let seconds = Clock.seconds(since: start)

        // The peer: a dictionary per event through JSONSerialization, same batching.
        let peerLines = min(lines, 200_000)
        let peerSeconds = try peer(lines: peerLines, events: events, fd: fd)

        let result = SinkResult(
            lines: lines, bytes: bytes, writes: writes, seconds: seconds, samples: samples.count,
            peerLines: peerLines, peerSeconds: peerSeconds, note: note)
        log(
            "sink: \(Format.rate(result.linesPerSecond)) lines/s (\(Format.decimal(Double(bytes) / Double(max(1, lines)), 0)) B/line), "
                + "JSONSerialization \(Format.rate(result.peerLinesPerSecond)) lines/s")
        return result
    }

    /// The same lines through `JSONSerialization` and `ISO8601DateFormatter`, batched the same way; seconds taken.
    private static func peer(lines: Int, events: [WardenEvent], fd: FileDescriptor) throws -> Double {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64 * 1024)
        let peerStart = Clock.nanos()
        for i in 0..<lines {
            let e = events[i % events.count]
            var object: [String: Any] = ["event": e.name, "time": formatter.string(from: e.time)]
            if case .write(let w) = e.kind {
                object["dir"] = w.dir
                object["file"] = w.file
                object["size"] = w.size
                object["total"] = w.total
                object["files"] = w.files
                object["quota"] = w.quota
            }
            let data = try JSONSerialization.data(withJSONObject: object)
            if buffer.count + data.count + 1 > 64 * 1024 {
                buffer.withUnsafeBytes { _ = Files.writeAll(fd, $0) }
                buffer.removeAll(keepingCapacity: true)
            }
            buffer.append(contentsOf: data)
            buffer.append(10)
        }
        buffer.withUnsafeBytes { _ = Files.writeAll(fd, $0) }
        return Clock.seconds(since: peerStart)
    }

    /// Writes `count` files into a watched folder and returns the `write` events the watcher reported.
    private static func captureWriteEvents(count: Int, work: String) throws -> [WardenEvent] {
        let root = "\(work)/sink"
        try Files.makeDirectory(root)
        defer { Files.discard(root) }
        let captured = Locked<[WardenEvent]>([])
        let settings = WardenSettings(directories: [DirectorySettings(name: "sink", path: root)], sizeBasis: .apparent)
        let watcher = Watcher(settings: settings) { event in
            if case .write = event.kind { captured.withLock { $0.append(event) } }
        }
        try watcher.start()
        let stream = FileStream(root: root, size: 4096, prefix: "thumbnails-")
        for _ in 0..<count { stream.writeOne() }
        let deadline = Clock.nanos() + 5_000_000_000
        while captured.withLock({ $0.count }) < count && Clock.nanos() < deadline { Clock.sleep(0.005) }
        watcher.stop()
        return captured.value
    }
}
