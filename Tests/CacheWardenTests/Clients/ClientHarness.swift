import Foundation
import Glibc
import Testing

// The watcher child and helpers shared by the client profile tests.
// MARK: - The watcher

/// `cachewarden run --config FILE`, the file written into the test's tree, with its JSON lines parsed.
final class Warden {
    let cli: RunningCLI

    init(_ tree: TemporaryTree, _ config: String) throws {
        let file = tree.url("cachewarden.conf")
        try config.write(toFile: file, atomically: true, encoding: .utf8)
        cli = try RunningCLI(["run", "--config", file])
    }

    func waitUntilReady() -> Bool { eventually { !events("ready").isEmpty } }

    /// The lines of one event, parsed.
    func events(_ name: String) -> [[String: Any]] {
        cli.lines.filter { $0.contains("\"event\":\"\(name)\"") }
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// SIGINT; the exit status. Every line printed must have parsed.
    func stop() -> Int32 {
        let status = cli.interrupt()
        let unparsed = cli.lines.filter {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) == nil
        }
        #expect(unparsed.isEmpty, "lines that are not JSON objects: \(unparsed.prefix(3))")
        return status
    }
}

/// A line's `time` field.
func eventTime(_ line: [String: Any]) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return (line["time"] as? String).flatMap { formatter.date(from: $0) }
}

func lastComponent(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }

func seconds(since start: Date) -> String { String(format: "%.1f", Date().timeIntervalSince(start)) }

/// The largest regular file under `root`, in bytes (apparent size).
func largestFile(in root: String) -> Int64 {
    var largest: Int64 = 0
    let walker = FileManager.default.enumerator(atPath: root)
    while let name = walker?.nextObject() as? String {
        var st = stat()
        if lstat(root + "/" + name, &st) == 0, st.st_mode & S_IFMT == S_IFREG {
            largest = max(largest, Int64(st.st_size))
        }
    }
    return largest
}

/// `count` bytes from a fixed-seed generator (xorshift): incompressible, and the same in every run.
func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<count).map { _ in
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}

// MARK: - Clients

/// A client's run: its exit status, stdout and stderr together, and how long it took.
struct ClientResult {
    var status: Int32
    var output: String
    var seconds: Double
}

/// Runs a client with the test's environment minus the variables starting with `dropping`, then `setting`
/// applied (nil removes), in `directory`. Output and errors share one pipe, so a chatty client cannot block on a
/// second pipe nobody reads yet.
func runClient(
    _ path: String, _ args: [String], dropping: [String] = [], setting: [String: String?] = [:],
    in directory: String? = nil
) throws -> ClientResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    var env = ProcessInfo.processInfo.environment.filter { key, _ in !dropping.contains { key.hasPrefix($0) } }
    for (key, value) in setting { env[key] = value }
    p.environment = env
    if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    p.standardInput = FileHandle.nullDevice
    let start = Date()
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return ClientResult(
        status: p.terminationStatus, output: String(decoding: data, as: UTF8.self),
        seconds: Date().timeIntervalSince(start))
}

/// No proxy for the local servers, whatever the machine's environment says.
let noProxy: [String: String?] = [
    "http_proxy": nil, "HTTP_PROXY": nil, "https_proxy": nil, "HTTPS_PROXY": nil,
    "all_proxy": nil, "ALL_PROXY": nil, "no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1",
]

// MARK: - Loops

/// How many rounds a client loop runs (`CACHEWARDEN_CLIENT_LOOPS`; a few by default, to keep CI short).
var clientLoops: Int { ProcessInfo.processInfo.environment["CACHEWARDEN_CLIENT_LOOPS"].flatMap { Int($0) } ?? 4 }

/// A client loop against a cache `warden` watches: each round runs the client (`round`), then other writes push
/// the cache over its quota (`fill`) and the loop waits, with a deadline, for the trim that follows once the cache
/// has been quiet for its `trim_after_idle`. Returns whether the cache was under `quota` on disk within a minute
/// of the last run.
func loopWithTrims(_ warden: Warden, cache: String, quota: Int64, round: (Int) throws -> Void, fill: (Int) -> Void)
    rethrows -> Bool
{
    for n in 1...clientLoops {
        try round(n)
        let trims = warden.events("trim").count
        fill(n)
        #expect(eventually(timeout: 30) { warden.events("trim").count > trims }, "round \(n): no trim")
    }
    return eventually(timeout: 60) { diskTotals(cache).total <= quota }
}
