import Foundation
import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// The metrics a fleet's alerts and dashboard key on (issue 22): per-directory limits, the backend, the last trim
/// and how short it fell, the watch-limit fallback, and the series that exist as 0 before their first event.
@Suite struct MetricsParityTests {
    private static func status(_ dir: String, total: Int64, quota: Int64) -> DirectoryStatus {
        var s = DirectoryStatus(
            totals: DirectoryTotals(dir: dir, path: "/srv/\(dir)", total: total, files: 3, quota: quota),
            oldest: nil, protectedBytes: 0, filesystemFree: 1 << 30, trimTarget: quota / 2, watches: 4)
        s.trimAt = quota
        s.hardQuota = quota * 2
        s.maxFiles = 1000
        s.polledDirectories = 2
        s.backend = "inotify"
        return s
    }

    private static func trim(_ dir: String, shortBy: Int64, at time: Date) -> WardenEvent {
        WardenEvent(
            .trim(
                TrimReport(
                    dir: dir, reason: .quota, removed: 2, freed: 100, totalBefore: 900, total: 800, quota: 500,
                    target: 250, durationMilliseconds: 3, shortBy: shortBy, dryRun: false)), time: time)
    }

    private static func text(_ metrics: WardenMetrics) -> String { String(decoding: metrics.render(), as: UTF8.self) }

    @Test func limitsBackendAndLastTrimArePerDirectory() throws {
        let metrics = WardenMetrics()
        metrics.update([Self.status("thumbs", total: 800, quota: 500)], groups: [])
        let trimmed = Date(timeIntervalSince1970: 1_800_000_000.5)
        metrics.record([Self.trim("thumbs", shortBy: 550, at: trimmed)])
        let s = MetricsTests.samples(Self.text(metrics))
        #expect(
            s["cachewarden_trim_at_bytes{dir=\"thumbs\"}"] == 500
                && s["cachewarden_hard_quota_bytes{dir=\"thumbs\"}"] == 1000)
        #expect(
            s["cachewarden_max_files{dir=\"thumbs\"}"] == 1000
                && s["cachewarden_trim_target_bytes{dir=\"thumbs\"}"] == 250)
        #expect(
            s["cachewarden_polled_directories{dir=\"thumbs\"}"] == 2 && s["cachewarden_watches{dir=\"thumbs\"}"] == 4)
        #expect(s["cachewarden_backend_info{dir=\"thumbs\",backend=\"inotify\"}"] == 1)
        #expect(s["cachewarden_short_by_bytes{dir=\"thumbs\"}"] == 550)
        #expect(s["cachewarden_last_trim_timestamp_seconds{dir=\"thumbs\"}"] == trimmed.timeIntervalSince1970)
        // A later trim that reaches its target says so.
        metrics.record([Self.trim("thumbs", shortBy: 0, at: trimmed.addingTimeInterval(60))])
        #expect(MetricsTests.samples(Self.text(metrics))["cachewarden_short_by_bytes{dir=\"thumbs\"}"] == 0)
    }

    @Test func seriesThatAlertsUseExistAsZeroBeforeTheirFirstEvent() throws {
        let metrics = WardenMetrics()
        metrics.update([Self.status("thumbs", total: 100, quota: 500)], groups: [])
        let s = MetricsTests.samples(Self.text(metrics))
        for kind in WardenMetrics.alertedErrorKinds {
            #expect(s["cachewarden_errors_total{kind=\"\(kind)\"}"] == 0, "\(kind)")
        }
        #expect(s["cachewarden_dropped_lines_total"] == 0 && s["cachewarden_inotify_overflows_total"] == 0)
        #expect(
            s["cachewarden_rescans_total{dir=\"thumbs\"}"] == 0
                && s["cachewarden_rescan_drift_bytes{dir=\"thumbs\"}"] == 0)
        #expect(s["cachewarden_short_by_bytes{dir=\"thumbs\"}"] == 0)
        #expect(s["cachewarden_last_trim_timestamp_seconds{dir=\"thumbs\"}"] == nil, "no trim yet, no timestamp")
        // A rescan's drift is not reset to 0 by the next snapshot.
        metrics.record([WardenEvent(.rescan(RescanReport(dir: "thumbs", drift: -4096, total: 100, files: 3)))])
        metrics.update([Self.status("thumbs", total: 100, quota: 500)], groups: [])
        #expect(MetricsTests.samples(Self.text(metrics))["cachewarden_rescan_drift_bytes{dir=\"thumbs\"}"] == -4096)
    }

    @Test func aDirectoryThatGoesTakesItsEventGaugesAndBackendWithIt() throws {
        let metrics = WardenMetrics()
        metrics.update(
            [Self.status("thumbs", total: 800, quota: 500), Self.status("logs", total: 10, quota: 0)], groups: [])
        metrics.record([Self.trim("thumbs", shortBy: 5, at: Date())])
        metrics.update([Self.status("logs", total: 10, quota: 0)], groups: [])
        let text = Self.text(metrics)
        // Counters and histograms stay (they only grow); every gauge of the directory goes.
        let gauges = Set(
            text.split(separator: "\n").compactMap { line -> Substring? in
                let f = line.split(separator: " ")
                return f.count == 4 && f[1] == "TYPE" && f[3] == "gauge" ? f[2] : nil
            })
        let left = text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("dir=\"thumbs\"") }
        #expect(!gauges.isEmpty && left.allSatisfy { !gauges.contains($0.prefix { $0 != "{" }) }, "\(left)")
        #expect(text.contains("cachewarden_backend_info{dir=\"logs\",backend=\"inotify\"} 1"))
    }

    @Test(.enabled(if: which("promtool") != nil, "needs promtool (apt-get install prometheus)"))
    func theNewFamiliesPassPromtool() throws {
        let metrics = WardenMetrics()
        metrics.update([Self.status("thumbs", total: 800, quota: 500)], groups: [])
        metrics.record([Self.trim("thumbs", shortBy: 5, at: Date())])
        let check = try MetricsTests.promtool(Self.text(metrics))
        #expect(check.status == 0 && check.said.isEmpty, "promtool: \(check.said)")
    }

    @Test func aWatcherReportsItsBackendAndLimits() throws {
        let tree = TemporaryTree()
        tree.mkdir("cache")
        var dir = DirectorySettings(name: "cache", path: tree.url("cache"), quota: 1_000_000)
        dir.trimAfterIdle = 5
        dir.maxFiles = 50
        let watcher = Watcher(settings: WardenSettings(directories: [dir]))
        try watcher.start()
        defer { watcher.stop() }
        let s = try #require(watcher.status().first)
        #expect(s.backend == "inotify" && s.polledDirectories == 0 && s.watches == 1)
        #expect(s.trimAt == 1_000_000 && s.hardQuota == 2_000_000 && s.maxFiles == 50)
    }

    @Test func freeSpaceWatermarksArePerDirectoryGaugesAndStatusFields() throws {
        var status = Self.status("thumbs", total: 100, quota: 500)
        let metrics = WardenMetrics()
        metrics.update([status], groups: [])
        #expect(!Self.text(metrics).contains("watermark"), "no low_disk_free, no watermark gauges")
        status.lowWatermark = 1 << 28
        status.highWatermark = 1 << 29
        metrics.update([status], groups: [])
        let s = MetricsTests.samples(Self.text(metrics))
        #expect(s["cachewarden_free_low_watermark_bytes{dir=\"thumbs\"}"] == Double(1 << 28))
        #expect(s["cachewarden_free_high_watermark_bytes{dir=\"thumbs\"}"] == Double(1 << 29))
        // The status JSON (control socket, `status --json`) carries them and the client reads them back.
        let json = try JSONValue(parsing: Array(status.jsonLine().utf8))
        let back = try #require(ControlClient.directoryStatus(json, now: Date()))
        #expect(back.lowWatermark == 1 << 28 && back.highWatermark == 1 << 29)
    }
}
