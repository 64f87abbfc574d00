import CacheWarden
import Dispatch
import Foundation
import Glibc

/// Quota-trim latencies (benchmark 4, first half).
struct TrimLatencyResult: Sendable {
    var quota: Int64
    var fileSize: Int
    /// Files each trim was meant to remove (quota / 2 / file size).
    var filesPerTrim: Int
    /// Milliseconds from the `close()` of the file that crossed the quota to the `trim` event in the handler.
    var latenciesMs: [Double]
    /// `durationMilliseconds` of each trim report (the deleting alone).
    var trimDurationsMs: [Double]
    var removed: [Int]
    /// Trims whose event arrived before the crossing file was closed (the watcher saw its size on `IN_MODIFY`);
    /// counted as 0 ms.
    var early: Int
    /// Microseconds per file of a plain watched `unlinkat` loop over as many files of the same size, measured
    /// after each trim (`UnlinkFloor`).
    var floorMicroseconds: [Double] = []
    /// Each trim's cost per file ÷ the floor measured right after it: pairing cancels the host's drift between
    /// moments (the floor alone moves by ±15 % within a run).
    var pairedRatios: [Double] = []
    /// The same after each trim for the trash path's floor (`UnlinkFloor`, `trashPath`): rename, stat, unlink.
    var trashFloorMicroseconds: [Double] = []
    var trashPairedRatios: [Double] = []
    var note: String?

    /// Microseconds per removed file of each trim (its report's duration ÷ files removed).
    var trimMicroseconds: [Double] {
        zip(trimDurationsMs, removed).compactMap { $1 > 0 ? $0 * 1000 / Double($1) : nil }
    }
}

/// One manual trim of half a tree beside `xargs -0 rm` of as many files (benchmark 4, second half).
struct HalfTrimResult: Sendable {
    var files: Int
    /// Wall seconds of `Watcher.trim(name, to: total / 2)`.
    var seconds: Double
    var removed: Int
    var reportMs: Double
    /// Wall seconds of `xargs -0 rm -f` over the same number of files in an identical tree; `nil` without xargs.
    var rmSeconds: Double?
    var rmFiles: Int
    /// The watcher's totals after the trim match a fresh scan.
    var exactAfter: Bool
}

/// Records the arrival time of every quota `trim` event and wakes the writer.
final class TrimProbe: Sendable {
    private let arrivals = Locked<[(UInt64, TrimReport)]>([])
    private let signal = DispatchSemaphore(value: 0)

    /// The watcher's handler.
    func handle(_ event: WardenEvent) {
        guard case .trim(let report) = event.kind, report.reason == .quota else { return }
        let now = Clock.nanos()
        arrivals.withLock { $0.append((now, report)) }
        signal.signal()
    }

    /// Waits up to `timeout` seconds for the next trim; its arrival time and report.
    func next(timeout: Double) -> (UInt64, TrimReport)? {
        guard signal.wait(timeout: .now() + timeout) == .success else { return nil }
        return arrivals.withLock { $0.removeFirst() }
    }
}

/// 4 (trim latency): an in-process `Watcher` with a quota; files are written until the quota is crossed, and the
/// time from the crossing file's `close()` to the `trim` event is taken, trim after trim. Then one manual trim of
/// half a tree of N files, beside `xargs -0 rm` of the same number of files on the same filesystem.
enum TrimBenchmark {
    static func latency(
        trims: Int, filesPerTrim: Int, size: Int = 4096, work: String,
        log: (String) -> Void
    ) throws -> TrimLatencyResult {
        let root = "\(work)/trim-latency"
        try Files.makeDirectory(root)
        defer { Files.discard(root) }
        let quota = Int64(2 * filesPerTrim * size)
        let probe = TrimProbe()
        let settings = WardenSettings(
            directories: [DirectorySettings(name: "latency", path: root, quota: quota)],
            sizeBasis: .apparent)
        let watcher = Watcher(settings: settings) { probe.handle($0) }
        try watcher.start()
        defer { watcher.stop() }

        let stream = FileStream(root: root, size: size)
        var total: Int64 = watcher.totals().first?.total ?? 0
        var result = TrimLatencyResult(
            quota: quota, fileSize: size, filesPerTrim: filesPerTrim, latenciesMs: [],
            trimDurationsMs: [], removed: [], early: 0)
        // Round 0 fills the empty folder and is not counted.
        for round in 0...trims {
            let needed = Int((quota - total) / Int64(size)) + 1
            for _ in 0..<max(0, needed - 1) { stream.writeOne() }
            stream.writeOne()
            let closedAt = Clock.nanos()
            guard stream.errors == 0 else {
                result.note =
                    "\(stream.errors) writes failed (round \(round)): \(String(cString: strerror(stream.lastError)))"
                break
            }
            guard let (arrived, report) = probe.next(timeout: 10) else {
                result.note = "no trim event within 10 s after crossing the quota (round \(round))"
                break
            }
            total = report.total
            guard round > 0 else { continue }
            if arrived < closedAt { result.early += 1 }
            result.latenciesMs.append(Clock.seconds(from: closedAt, to: arrived) * 1000)
            result.trimDurationsMs.append(report.durationMilliseconds)
            result.removed.append(report.removed)
            // After every trim: on a shared machine the floor drifts by ±15 % from one moment to the next, and a
            // median over as many samples as the trims has keeps the ratio steady.
            if let floor = UnlinkFloor.microsecondsPerFile(count: filesPerTrim, size: size, work: work) {
                result.floorMicroseconds.append(floor)
                if report.removed > 0 {
                    result.pairedRatios.append(report.durationMilliseconds * 1000 / Double(report.removed) / floor)
                }
            }
            if let floor = UnlinkFloor.microsecondsPerFile(
                count: filesPerTrim, size: size, work: work, trashPath: true)
            {
                result.trashFloorMicroseconds.append(floor)
                if report.removed > 0 {
                    result.trashPairedRatios.append(
                        report.durationMilliseconds * 1000 / Double(report.removed) / floor)
                }
            }
        }
        log(
            "trim: latency p50 \(Format.ms(Stats.percentile(result.latenciesMs, 50))), "
                + "p99 \(Format.ms(Stats.percentile(result.latenciesMs, 99))) over \(result.latenciesMs.count) trims of ~\(filesPerTrim) files, "
                + "\(Format.decimal(Stats.median(result.trimMicroseconds), 1)) µs/file vs unlink floor \(Format.decimal(Stats.median(result.floorMicroseconds), 1)) µs/file, "
                + "paired ×\(Format.decimal(Stats.median(result.pairedRatios), 2))")
        return result
    }

    /// The half-tree trim on a tree of `files` files; `spares` (trees left by the throughput runs) are cut down and
    /// used instead of writing the two trees when they are big enough.
    static func halfTrim(
        files: Int, size: Int = 4096, env: Environment, work: String, spares: [SpareTree] = [],
        log: (String) -> Void
    ) throws -> HalfTrimResult {
        let cwRoot = "\(work)/half-cw"
        let rmRoot = "\(work)/half-rm"
        defer {
            Files.discard(cwRoot)
            Files.discard(rmRoot)
            Files.discard("\(work)/half-rm.list")
        }
        var reused = 0
        for (spare, target) in zip(spares, [cwRoot, rmRoot]) where spare.reuse(as: target, count: files, size: size) {
            reused += 1
        }
        for spare in spares.dropFirst(2) { Files.discard(spare.path) }
        for target in [cwRoot, rmRoot].dropFirst(reused) {
            log("trim: writing \(files) × \(Format.bytes(Int64(size))) files in \(target)…")
            _ = try TreeBuilder.uniform(at: target, count: files, size: size)
        }
        if reused > 0 { log("trim: reused \(reused) tree(s) from the throughput runs, cut to \(files) files") }

        let settings = WardenSettings(
            directories: [DirectorySettings(name: "half", path: cwRoot)], sizeBasis: .apparent)
        let watcher = Watcher(settings: settings) { _ in }
        try watcher.start()
        let total = watcher.totals().first?.total ?? 0
        let (report, seconds) = try Clock.time { () throws(WardenError) -> TrimReport in
            try watcher.trim("half", to: total / 2)
        }
        // The deletions come back as IN_DELETE records: let the watcher absorb them, then compare with a scan.
        Clock.sleep(0.2)
        let after = watcher.totals().first
        watcher.stop()
        let scan = FreshScan.of(cwRoot)
        let exact = after.map { $0.files == scan.files && $0.total == scan.bytes } ?? false

        // xargs -0 rm -f over as many files (the oldest ones, as the trim picks) in the twin tree.
        var rmSeconds: Double?
        let rmCount = report.removed
        if let xargs = env.xargs {
            let list = "\(work)/half-rm.list"
            try Files.writeList(
                (0..<rmCount).map { FileStream.path(root: rmRoot, prefix: "w", fanOut: 100, index: $0) }, to: list)
            let r = try runToEnd(xargs, ["-0", "rm", "-f", "--"], stdin: list)
            if r.status == 0 { rmSeconds = r.seconds }
        }
        log(
            "trim: half of \(files) files: cachewarden \(Format.seconds(seconds)) (\(report.removed) removed), "
                + "xargs rm \(rmSeconds.map { Format.seconds($0) } ?? "n/a")")
        return HalfTrimResult(
            files: files, seconds: seconds, removed: report.removed,
            reportMs: report.durationMilliseconds, rmSeconds: rmSeconds, rmFiles: rmCount,
            exactAfter: exact)
    }
}
