import CacheWarden
import CacheWardenFilesystem
import Foundation
import Glibc
import SystemPackage

/// Follows the JSON lines a watcher child writes to a file: counts `write` lines cheaply (by prefix) and decodes
/// the others (`ready`, `status`, `overflow`, `rescan`, `dropped`, `error`, `stop`).
final class EventTail {
    /// Files and bytes from a `ready` / `status` / `stop` line.
    struct Totals: Equatable {
        var files: Int
        var total: Int64
    }

    private let file: OwnedDescriptor
    private var pending: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private static let writePrefix = Array(#"{"event":"write""#.utf8)

    private(set) var ready: Totals?
    private(set) var lastStatus: Totals?
    /// Status lines seen so far (each answers one SIGUSR1).
    private(set) var statusCount = 0
    private(set) var stop: Totals?
    private(set) var writeLines = 0
    private(set) var overflows = 0
    private(set) var rescans = 0
    private(set) var dropped = 0
    /// The first few `error` messages.
    private(set) var errors: [String] = []

    /// Follows `path` (which the child is writing) from its start.
    init(path: String) throws {
        guard let file = try? OwnedDescriptor.opening({ open(path, O_RDONLY | O_CLOEXEC) }) else {
            throw BenchError("cannot read \(path)")
        }
        self.file = file
    }

    /// Reads whatever was appended since the last call and handles its complete lines.
    func poll() {
        while true {
            let n = buffer.withUnsafeMutableBytes { read(file.fd.rawValue, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            pending.append(contentsOf: buffer[0..<n])
        }
        var start = 0
        while let nl = pending[start...].firstIndex(of: 10) {
            handle(pending[start..<nl])
            start = nl + 1
        }
        pending.removeFirst(start)
    }

    /// Polls until the `ready` line of `child` (which writes this file) arrives; throws when the child exits or
    /// `timeout` seconds pass first, with `what` and the first `error` line in the message.
    func awaitReady(of child: Child, timeout: Double = 30, what: String = "the watcher child") throws {
        let deadline = Clock.nanos() + UInt64(timeout * 1e9)
        while ready == nil {
            guard child.isRunning, Clock.nanos() < deadline else {
                let why = errors.first ?? "exit status \(child.isRunning ? "none" : String(child.stop()))"
                throw WatcherNotReady(description: "\(what) did not report ready (\(why))")
            }
            Clock.sleep(0.001)
            poll()
        }
    }

    /// Sends SIGUSR1 to `child` and polls until the `status` line answering it arrives (`timeout` seconds at
    /// most); `false` when none came. `lastStatus` then holds its totals.
    @discardableResult
    func askStatus(of child: Child, timeout: Double = 2) -> Bool {
        let asked = statusCount
        kill(child.pid, SIGUSR1)
        let waitUntil = Clock.nanos() + UInt64(timeout * 1e9)
        repeat { Clock.sleep(0.002); poll() } while statusCount == asked && Clock.nanos() < waitUntil
        return statusCount > asked
    }

    /// Asks `child` for `status` until its totals equal a fresh scan of `root` (every change read), or `seconds`
    /// have passed; the last scan.
    func awaitFreshScan(of child: Child, root: String, seconds: Double = 10) -> FreshScan {
        let deadline = Clock.nanos() + UInt64(seconds * 1e9)
        var scan = FreshScan.of(root)
        while askStatus(of: child), Clock.nanos() < deadline, lastStatus != Totals(files: scan.files, total: scan.bytes)
        {
            Clock.sleep(0.02)
            scan = FreshScan.of(root)
        }
        return scan
    }

    private func handle(_ line: ArraySlice<UInt8>) {
        if line.starts(with: Self.writePrefix) { writeLines += 1; return }
        guard line.first == UInt8(ascii: "{"),
            let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            let event = object["event"] as? String
        else { return }
        func totals() -> Totals? {
            guard let files = (object["files"] as? NSNumber)?.intValue,
                let total = (object["total"] as? NSNumber)?.int64Value
            else { return nil }
            return Totals(files: files, total: total)
        }
        switch event {
        case "ready": ready = totals()
        case "status": lastStatus = totals(); statusCount += 1
        case "stop": stop = totals()
        case "overflow": overflows += 1
        case "rescan": rescans += 1
        case "dropped": dropped += (object["count"] as? NSNumber)?.intValue ?? 0
        case "error": if errors.count < 5 { errors.append(object["message"] as? String ?? "?") }
        default: break
        }
    }
}
