import CacheWarden
import CacheWardenCommandLine
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
    /// The ledger's storage by part (name, bytes).
    var ledger: [String: Int] = [:]
    /// The backend that followed the tree, the kernel objects it held at `ready` (inotify watches, fanotify
    /// marks, from this process's fdinfo) and the growth of the kernel's unreclaimable slab (`SUnreclaim` in
    /// /proc/meminfo) from start to ready: where watches live (noisy: any process adds to it).
    var backend = "inotify"
    var inotifyWatches = 0
    var fanotifyMarks = 0
    var unreclaimableGrowth: Int64 = 0

    /// Peak-RSS growth caused by indexing, per counted file.
    var hwmBytesPerFile: Double { files > 0 ? Double(after.hwmBytes - before.hwmBytes) / Double(files) : 0 }
    /// Resident-set growth after indexing, per counted file.
    var rssBytesPerFile: Double { files > 0 ? Double(after.rssBytes - before.rssBytes) / Double(files) : 0 }
}

/// `cachewarden-bench index-child <tree>` (hidden): index one tree in a fresh process and report the time and the
/// memory, so that neither the benchmark's own allocations nor earlier runs blur the figures.
struct IndexChildCommand {
    static let spec = CommandSpec(
        "index-child", abstract: "Index one tree and print time and memory (used by the benchmark).",
        options: [
            .value(
                "basis", "basis", help: "Size basis: allocated or apparent.",
                completion: .values(["allocated", "apparent"])),
            .value(
                "quota", "bytes",
                help: "Quota in bytes (0: none). With a quota the watcher keeps its files in oldest-first order."),
            .value(
                "backend", "backend", help: "inotify (the default), fanotify or poll.",
                completion: .values(["inotify", "fanotify", "poll"])),
        ],
        arguments: [ArgumentSpec("path", help: "The tree to index.", completion: .directory)],
        hidden: true)

    var path: String
    var basis: String
    var quota: Int64
    var backend: BackendChoice

    init(_ a: ParsedArguments) throws {
        path = a.argument("path") ?? ""
        basis = try a.choice("basis", of: ["allocated", "apparent"]) ?? "allocated"
        quota = Int64(try a.integer("quota", in: 0...Int.max) ?? 0)
        backend =
            BackendChoice(rawValue: try a.choice("backend", of: ["inotify", "fanotify", "poll"]) ?? "inotify")
            ?? .inotify
    }

    func run() throws {
        let settings = WardenSettings(
            directories: [DirectorySettings(name: "bench", path: path, quota: quota)],
            sizeBasis: basis == "apparent" ? .apparent : .allocated)
        var chosen = settings
        chosen.backend = backend
        let watcher = Watcher(settings: chosen)
        let before = MemorySample.current()
        let slab = KernelObjects.unreclaimableSlab()
        let start = Clock.nanos()
        try watcher.start()
        let seconds = Clock.seconds(since: start)
        let after = MemorySample.current()
        let slabAfter = KernelObjects.unreclaimableSlab()
        let totals = watcher.totals().first
        var report = IndexChildReport(
            seconds: seconds, files: totals?.files ?? 0, total: totals?.total ?? 0,
            before: before, after: after)
        for (part, bytes) in watcher.ledgerMemory() { report.ledger[part] = bytes }
        report.backend = backend.rawValue
        (report.inotifyWatches, report.fanotifyMarks) = KernelObjects.notificationObjects()
        report.unreclaimableGrowth = slabAfter - slab
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        FileHandle.standardOutput.write(Data((IndexChildReport.marker + json + "\n").utf8))
        watcher.stop()
    }
}
