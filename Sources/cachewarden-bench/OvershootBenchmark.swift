import Foundation
import Glibc

/// One writer burst into the quota'd folder, watched or not.
struct OvershootRun: Sendable {
    var watched: Bool
    var writerSeconds: Double
    var writerBytes: Int64
    /// Watched runs: the highest used bytes of the mount above the quota (the sampler's peak), and its share.
    var peakOverBytes: Int64?
    var samples: Int = 0
    var trims: Int = 0
    var overflows: Int = 0
    /// The watcher's last `status` equals a fresh scan, and the folder is at or under its quota.
    var exact: Bool?
    var underQuota: Bool?

    var writerRate: Double { writerSeconds > 0 ? Double(writerBytes) / writerSeconds : 0 }
}

struct OvershootResult: Sendable {
    var files: Int
    var size: Int
    var quota: Int64
    var mount: String
    /// The writer's pace in bytes per second; nil: as fast as it can.
    var rate: Double?
    var runs: [OvershootRun] = []
    var note: String?

    var watched: [OvershootRun] { runs.filter(\.watched) }
    var alone: [OvershootRun] { runs.filter { !$0.watched } }
    /// Peak overshoot per watched run, in percent of the quota.
    var overshootPercents: [Double] {
        watched.compactMap { $0.peakOverBytes.map { max(0, Double($0)) / Double(quota) * 100 } }
    }
    /// Best writer speed watched ÷ best alone: the unwatched bursts on a fresh tmpfs swing widely from run to
    /// run (page allocation after the last burst's pages were freed), so each side's best run is compared.
    var writerRatio: Double? {
        let a = alone.map(\.writerRate).max() ?? 0, w = watched.map(\.writerRate).max() ?? 0
        return a > 0 && w > 0 ? w / a : nil
    }
}

/// The quota under a full-speed writer: a tmpfs of its own (mounted here when run as root, so the disk is not the
/// limit and its used bytes are the folder's), `files` × `size` written as fast as one thread can into a folder
/// with `quota`, watched by the `cachewarden run` child, while a sampler thread reads the mount's used bytes every
/// 200 µs. Runs alternate: writer alone, writer watched.
enum OvershootBenchmark {
    static func run(
        files: Int = 8000, size: Int = 64 << 10, quota: Int64 = 64_000_000, rate: Double? = nil, runs: Int,
        env: Environment, work: String, log: (String) -> Void
    ) throws -> OvershootResult {
        guard let cli = env.cli else { throw BenchError("the cachewarden CLI was not found (--cli)") }
        let mount = "\(work)/overshoot-fs"
        try Files.makeDirectory(mount)
        let own = try mountTmpfs(mount, bytes: Int64(files * size) + (256 << 20))
        defer {
            if own { umount2(mount, Int32(MNT_DETACH)) }
            Files.discard(mount)
        }
        var result = OvershootResult(
            files: files, size: size, quota: quota,
            mount: own ? "tmpfs (own)" : Environment.mountEntry(for: mount).type, rate: rate)
        let burst = { (watched: Bool, root: String) throws -> OvershootRun in
            try Self.burst(
                watched: watched, root: root, files: files, size: size, quota: quota, rate: rate, cli: cli,
                mount: mount, work: work)
        }
        if !own && result.mount != "tmpfs" {
            result.note = "not root and \(mount) is not on tmpfs: used bytes include other writers"
        }
        // A first burst that is not counted: tmpfs's first pages and the writer's warm-up made it several times slower.
        _ = try burst(false, "\(mount)/warmup")
        for i in 0..<runs {
            result.runs.append(try burst(false, "\(mount)/alone\(i)"))
            let w = try burst(true, "\(mount)/cache\(i)")
            result.runs.append(w)
            log(
                "overshoot\(rate.map { " at " + Format.bytes(Int64($0)) + "/s" } ?? ""): run \(i + 1): peak \(Format.decimal(Double(w.peakOverBytes ?? 0) / Double(quota) * 100, 1)) % over "
                    + "\(Format.bytes(quota)), writer \(Format.bytes(Int64(w.writerRate)))/s (alone \(Format.bytes(Int64(result.runs[result.runs.count - 2].writerRate)))/s), "
                    + "\(w.trims) trims, exact \(w.exact == true ? "yes" : "NO"), under quota \(w.underQuota == true ? "yes" : "NO")"
            )
        }
        return result
    }

    /// Mounts a tmpfs of `bytes` at `path` when running as root; false (the folder is used as it is) otherwise.
    private static func mountTmpfs(_ path: String, bytes: Int64) throws -> Bool {
        guard geteuid() == 0 else { return false }
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(bytes),mode=0755") == 0 else {
            throw BenchError("mount tmpfs on \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }

    private static func burst(
        watched: Bool, root: String, files: Int, size: Int, quota: Int64, rate: Double?,
        cli: String, mount: String, work: String
    ) throws -> OvershootRun {
        try Files.makeDirectory(root)
        defer { Files.discard(root) }
        var child: Child?
        var tail: EventTail?
        // The event lines go outside the measured mount: on it they would count as overshoot.
        let output = "\(work)/overshoot-\((root as NSString).lastPathComponent).jsonl"
        defer { child?.stop(); Files.discard(output) }
        if watched {
            let c = try Child(
                cli, ["run", "--dir", root, "--quota", "\(quota)", "--size-basis", "apparent"], stdout: .file(output))
            child = c
            let t = try EventTail(path: output)
            tail = t
            try t.awaitReady(of: c, what: "overshoot: the watcher")
        }
        let sampler = UsedBytesSampler(mount: mount)
        if watched { sampler.start() }
        let stream = FileStream(root: root, size: size)
        let start = Clock.nanos()
        for k in 0..<files {
            stream.writeOne()
            // A paced writer sleeps until file k + 1 is due (the average rate holds; each sleep is coarse).
            if let rate, case let due = start + UInt64(Double((k + 1) * size) / rate * 1e9),
                case let now = Clock.nanos(), due > now
            {
                Clock.sleep(Double(due - now) / 1e9)
            }
        }
        let seconds = Clock.seconds(since: start)
        var run = OvershootRun(
            watched: watched, writerSeconds: seconds, writerBytes: Int64((stream.written - stream.errors) * size))
        guard let c = child, let t = tail else { return run }
        let (peak, samples) = sampler.stop()
        run.peakOverBytes = peak - sampler.baseline - quota
        run.samples = samples
        let scan = t.awaitFreshScan(of: c, root: root)
        run.exact = t.lastStatus == EventTail.Totals(files: scan.files, total: scan.bytes)
        run.underQuota = scan.bytes <= quota
        run.overflows = t.overflows
        c.stop()
        run.trims =
            (try? String(contentsOfFile: output, encoding: .utf8))?.components(separatedBy: #"{"event":"trim""#).count
            ?? 1
        run.trims -= 1
        return run
    }
}

/// A thread reading a mount's used bytes (`statvfs`) every 200 µs and keeping the peak.
/// `@unchecked Sendable` by a lock, not a queue (no queue to assert): what the sampling thread and the caller share
/// is in `state` (`Locked`); `thread` is written by `start()` and read by `stop()`, both called by the one thread
/// that runs the benchmark.
final class UsedBytesSampler: @unchecked Sendable {
    private let mount: String
    private let state = Locked<(stop: Bool, peak: Int64, samples: Int)>((false, 0, 0))
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)
    /// Used bytes when the sampler was made (the folder is empty then).
    let baseline: Int64

    init(mount: String) {
        self.mount = mount
        baseline = Self.used(mount)
    }

    static func used(_ mount: String) -> Int64 {
        var v = statvfs()
        guard statvfs(mount, &v) == 0 else { return 0 }
        return Int64(v.f_blocks - v.f_bfree) * Int64(v.f_frsize)
    }

    func start() {
        let t = Thread { [self] in
            var pause = timespec(tv_sec: 0, tv_nsec: 200_000)
            while !state.withLock({ $0.stop }) {
                let u = Self.used(mount)
                state.withLock {
                    $0.peak = max($0.peak, u); $0.samples += 1
                }
                nanosleep(&pause, nil)
            }
            done.signal()
        }
        t.start()
        thread = t
    }

    /// Stops the thread; the peak used bytes and the number of samples.
    func stop() -> (Int64, Int) {
        state.withLock { $0.stop = true }
        if thread != nil { done.wait() }
        return state.withLock { ($0.peak, $0.samples) }
    }
}
