import ArgumentParser
import CacheWarden
import Dispatch
import Foundation
import Glibc

/// What `index-child` measured, printed on one stdout line after `IndexChildReport.marker`.
struct IndexChildReport: Codable, Sendable {
    /// The line prefix that marks the report (anything else on stdout is ignored).
    static let marker = "BENCH-INDEX "

    /// Wall seconds from the `Watcher.start()` call to its return (the `ready` point).
    var seconds: Double
    /// Files and bytes the watcher counted.
    var files: Int
    var total: Int64
    var before: MemorySample
    var after: MemorySample

    /// Peak-RSS growth caused by indexing, per counted file.
    var hwmBytesPerFile: Double { files > 0 ? Double(after.hwmBytes - before.hwmBytes) / Double(files) : 0 }
    /// Resident-set growth after indexing, per counted file.
    var rssBytesPerFile: Double { files > 0 ? Double(after.rssBytes - before.rssBytes) / Double(files) : 0 }
}

/// `cachewarden-bench index-child <tree>` (hidden): index one tree in a fresh process and report the time and the
/// memory, so that neither the benchmark's own allocations nor earlier runs blur the figures.
struct IndexChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index-child", abstract: "Index one tree and print time and memory (used by the benchmark).",
        shouldDisplay: false)

    @Argument(help: "The tree to index.")
    var path: String

    @Option(help: "Size basis: allocated or apparent.")
    var basis: String = "allocated"

    func run() throws {
        let settings = WardenSettings(directories: [DirectorySettings(name: "bench", path: path)],
                                      sizeBasis: basis == "apparent" ? .apparent : .allocated)
        let watcher = Watcher(settings: settings)
        let before = MemorySample.current()
        let start = Clock.nanos()
        try watcher.start()
        let seconds = Clock.seconds(since: start)
        let after = MemorySample.current()
        let totals = watcher.totals().first
        let report = IndexChildReport(seconds: seconds, files: totals?.files ?? 0, total: totals?.total ?? 0,
                                      before: before, after: after)
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        FileHandle.standardOutput.write(Data((IndexChildReport.marker + json + "\n").utf8))
        watcher.stop()
    }
}

/// `cachewarden-bench watch-child <dir>` (hidden): the throughput watcher when the `cachewarden` CLI binary is not
/// found. Like `cachewarden run --dir <dir> --size-basis apparent`: JSON lines on stdout (batched up to 64 KiB),
/// a `status` line per SIGUSR1, `stop` lines and exit 0 on SIGTERM/SIGINT.
struct WatchChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch-child", abstract: "Watch one directory, printing JSON lines (used by the benchmark).",
        shouldDisplay: false)

    @Argument(help: "The directory to watch.")
    var path: String

    func run() throws {
        let out = LineBuffer(fd: 1)
        let settings = WardenSettings(directories: [DirectorySettings(name: "bench", path: path)], sizeBasis: .apparent)
        let watcher = Watcher(settings: settings) { event in out.append(event) }
        try watcher.start()
        var sources: [any DispatchSourceSignal] = []
        func on(_ signo: Int32, _ body: @escaping @Sendable () -> Void) {
            signal(signo, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: signo, queue: .main)
            s.setEventHandler(handler: body)
            s.resume()
            sources.append(s)
        }
        let shutdown: @Sendable () -> Void = {
            watcher.stop()
            out.flush()
            Glibc.exit(0)
        }
        on(SIGTERM, shutdown)
        on(SIGINT, shutdown)
        on(SIGUSR1) { watcher.requestStatus() }
        withExtendedLifetime(sources) { dispatchMain() }
    }
}

/// JSON lines waiting for one `write(2)`: flushed at 64 KiB, and at once for every event that is not a `write`.
final class LineBuffer: Sendable {
    private let fd: Int32
    private let pending = Locked<[UInt8]>([])

    init(fd: Int32) { self.fd = fd }

    /// Queues `event`'s line, writing the batch out when it is full or the event is not a `write`.
    func append(_ event: WardenEvent) {
        let line = event.jsonLineBytes()
        var urgent = true
        if case .write = event.kind { urgent = false }
        let batch: [UInt8]? = pending.withLock { p in
            p.append(contentsOf: line)
            guard urgent || p.count >= 64 * 1024 else { return nil }
            defer { p.removeAll(keepingCapacity: true) }
            return p
        }
        if let batch { batch.withUnsafeBytes { _ = Files.writeAll(fd, $0) } }
    }

    /// Writes whatever is queued.
    func flush() {
        let batch = pending.withLock { p in defer { p.removeAll() }; return p }
        batch.withUnsafeBytes { _ = Files.writeAll(fd, $0) }
    }
}
