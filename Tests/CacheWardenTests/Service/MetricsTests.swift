import Foundation
import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// The metrics file: checked by Prometheus's own `promtool`, replaced whole, kept current, and scraped end to end
/// through a real `prometheus-node-exporter` on loopback.
@Suite struct MetricsTests {
    /// The samples of an exposition text: `name{labels}` → value.
    static func samples(_ text: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            out[String(line[..<space])] = value
        }
        return out
    }

    /// `promtool check metrics` on `text`: its exit status and what it said (lint problems or parse errors).
    static func promtool(_ text: String) throws -> (status: Int32, said: String) {
        let r = try runProcess(try #require(which("promtool")), ["check", "metrics"], stdin: text)
        return (r.status, r.out + r.err)
    }

    private func quotaDirectory(_ tree: TemporaryTree, quota: Int64 = 200_000) -> WardenSettings {
        tree.mkdir("cache")
        return WardenSettings(directories: [DirectorySettings(name: "cache", path: tree.url("cache"), quota: quota)])
    }

    @Test(.enabled(if: which("promtool") != nil, "needs promtool (apt-get install prometheus)"))
    func theFilePassesPromtoolAndSaysWhatStatusSays() throws {
        let tree = TemporaryTree()
        tree.mkdir("metrics")
        let sink = MetricsFileSink(path: tree.url("metrics/cw.prom"), interval: 60)
        let watcher = Watcher(settings: quotaDirectory(tree), sinks: [sink])
        try watcher.start()
        try sink.start(watcher: watcher)
        for i in 0..<30 { tree.write("cache/f\(i)", size: 20_000) }
        #expect(eventually { watcher.totals().first?.total == diskTotals(tree.url("cache")).total })
        let expected = try #require(watcher.status().first)
        // Within a second of the last change the file says the same as status.
        var text = ""
        #expect(
            eventually(timeout: 5) {
                text = (try? String(contentsOfFile: sink.path, encoding: .utf8)) ?? ""
                return Self.samples(text)["cachewarden_bytes{dir=\"cache\"}"] == Double(expected.totals.total)
            }, "\(text)")
        let check = try Self.promtool(text)
        #expect(check.status == 0 && check.said.isEmpty, "promtool: \(check.said)")
        let s = Self.samples(text)
        #expect(s["cachewarden_files{dir=\"cache\"}"] == Double(expected.totals.files))
        #expect(
            s["cachewarden_quota_bytes{dir=\"cache\"}"] == 200_000
                && s["cachewarden_trim_target_bytes{dir=\"cache\"}"] == 100_000)
        let evicted = s["cachewarden_evictions_total{dir=\"cache\",reason=\"quota\"}"] ?? 0
        #expect(evicted > 0 && s["cachewarden_trims_total{dir=\"cache\",reason=\"quota\"}"] ?? 0 > 0)
        #expect(s["cachewarden_write_events_total{dir=\"cache\"}"] == 30)
        #expect(
            s["cachewarden_trim_duration_seconds_count{dir=\"cache\"}"]
                == s["cachewarden_trims_total{dir=\"cache\",reason=\"quota\"}"])
        #expect(s["cachewarden_build_info{version=\"\(CacheWardenVersion.current)\"}"] == 1)
        #expect(abs((s["cachewarden_start_time_seconds"] ?? 0) - Date().timeIntervalSince1970) < 60)
        #expect(s["cachewarden_inotify_overflows_total"] == 0 && s["cachewarden_watches{dir=\"cache\"}"] == 1)
        watcher.stop()
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: tree.url("metrics"))
        #expect(leftovers == ["cw.prom"], "temporary files left: \(leftovers)")
    }

    @Test func readersNeverSeeAHalfWrittenFile() throws {
        let tree = TemporaryTree()
        let sink = MetricsFileSink(path: tree.url("cw.prom"), interval: 0.05)
        let watcher = Watcher(settings: quotaDirectory(tree, quota: 0), sinks: [sink])
        try watcher.start()
        try sink.start(watcher: watcher)
        // The timer rewrites the file every 50 ms while this reads it as fast as it can, until it has read over 100
        // times across at least 10 versions (or a generous deadline passes and the expectation below fails).
        var reads = 0
        var versions = 0
        var lastInode: UInt64 = 0
        let deadline = Date().addingTimeInterval(30)
        while (reads <= 100 || versions < 10) && Date() < deadline {
            var st = stat()
            guard let text = try? String(contentsOfFile: sink.path, encoding: .utf8), lstat(sink.path, &st) == 0 else {
                continue
            }
            if UInt64(st.st_ino) != lastInode { versions += 1; lastInode = UInt64(st.st_ino) }
            reads += 1
            #expect(
                text.hasSuffix("\n") && text.contains("cachewarden_build_info"), "a partial file after \(reads) reads")
        }
        watcher.stop()
        #expect(reads > 100 && versions >= 10, "\(reads) reads of \(versions) versions")
    }

    @Test func aMetricsFileInAFolderThatDoesNotExistIsAnErrorAtStart() throws {
        let tree = TemporaryTree()
        let sink = MetricsFileSink(path: tree.url("missing/cw.prom"))
        let watcher = Watcher(settings: quotaDirectory(tree), sinks: [sink])
        try watcher.start()
        defer { watcher.stop() }
        #expect { try sink.start(watcher: watcher) } throws: { "\($0)".contains(tree.url("missing/cw.prom")) }
    }

    @Test(
        .enabled(
            if: which("prometheus-node-exporter") != nil,
            "needs prometheus-node-exporter (apt-get install prometheus-node-exporter)"),
        .enabled(if: which("python3") != nil, "needs python3 to fetch the scrape"))
    func nodeExporterServesWhatTheDaemonReports() throws {
        let tree = TemporaryTree()
        tree.mkdir("cache")
        tree.mkdir("textfile")
        for i in 0..<12 { tree.write("cache/f\(i)", size: 30_000) }
        let config = tree.url("cw.conf")
        try
            "control_socket = cw.sock\nmetrics_file = textfile/cachewarden.prom\nmetrics_interval = 1s\ndir.cache.path = cache\ndir.cache.quota = 10MB\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try RunningCLI(["run", "-c", config])
        #expect(eventually { tree.exists("textfile/cachewarden.prom") && tree.exists("cw.sock") }, "\(daemon.stderr)")
        let port = freePort()
        let exporter = try RunningCLI(
            [
                "--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults",
                "--collector.textfile", "--collector.textfile.directory=\(tree.url("textfile"))",
            ],
            executable: try #require(which("prometheus-node-exporter")))
        defer { kill(exporter.process.processIdentifier, SIGKILL) }
        let status = try runProcess(cachewardenBinary(), ["status", "-c", config, "--json"])
        let reported = try #require(try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
        var scrape = ""
        #expect(
            eventually(timeout: 20) {
                scrape = httpGet("http://127.0.0.1:\(port)/metrics") ?? ""
                return scrape.contains("cachewarden_bytes")
            }, "no scrape: \(exporter.stderr.suffix(500))")
        let s = Self.samples(scrape)
        #expect(s["cachewarden_bytes{dir=\"cache\"}"] == (reported["total"] as? NSNumber)?.doubleValue, "\(scrape)")
        #expect(
            s["cachewarden_files{dir=\"cache\"}"] == 12 && s["cachewarden_quota_bytes{dir=\"cache\"}"] == 10_000_000)
        #expect(s["node_textfile_scrape_error"] == 0, "node_exporter could not read the file")
        #expect(daemon.interrupt() == 0)
    }
}
