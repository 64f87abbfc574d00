import Foundation
import Glibc

/// The watcher child exited or stayed silent before its `ready` line.
struct WatcherNotReady: Error, CustomStringConvertible {
    var description: String
}

/// One writer burst under one watcher (or none).
struct WatchedRun: Sendable {
    /// Who watched: "none", "cachewarden", "inotifywait".
    var watcher: String
    var writer: BurstResult
    /// Watcher CPU seconds (user + system) from ready to caught up; `nil` without a watcher.
    var cpuSeconds: Double?
    /// Seconds from the writer's last `close` until the watcher had caught up: its `status` matched the files
    /// written (CacheWarden), or its CPU time stopped growing (inotifywait, whose output goes to /dev/null).
    var catchUpSeconds: Double?
    /// The watcher's setup time: launch to ready / "Watches established.".
    var setupSeconds: Double?
    /// CacheWarden only: an `overflow` line was seen, with its `rescan`s.
    var overflows: Int?
    var rescans: Int?
    /// CacheWarden only: the last `status` totals and the fresh scan to compare them with.
    var watcherTotals: EventTail.Totals?
    var scan: FreshScan?
    var writeLines: Int?
    var dropped: Int?
    var errors: [String] = []
    var note: String?

    /// The final totals equal a fresh scan (files and bytes).
    var exact: Bool? {
        guard let scan else { return nil }
        guard let t = watcherTotals else { return false }
        return t.files == scan.files && t.total == scan.bytes
    }

    /// Watcher CPU seconds per 100,000 files written.
    var cpuPer100k: Double? { cpuSeconds.map { $0 / Double(max(1, writer.files)) * 100_000 } }

    /// Files per second until the watcher had caught up (writer time plus catch-up).
    var watcherRate: Double? {
        catchUpSeconds.map { Double(writer.files) / (writer.seconds + $0) }
    }
}

/// The three runs of benchmark 3.
struct ThroughputResult: Sendable {
    var files: Int
    var size: Int
    /// The unwatched runs: one before the watched ones, one after.
    var alone: [WatchedRun]
    var cachewarden: WatchedRun?
    var inotifywait: WatchedRun?
    var inotifywaitNote: String?
    /// "cachewarden CLI (path)".
    var watcherProgram: String
    /// Files of the discarded warm-up burst.
    var warmupFiles: Int

    /// Unwatched writer seconds: the mean of the runs before and after the watched ones.
    var baselineSeconds: Double { alone.map(\.writer.seconds).reduce(0, +) / Double(max(1, alone.count)) }
    /// Unwatched files per second at that mean.
    var baselineRate: Double { baselineSeconds > 0 ? Double(files) / baselineSeconds : 0 }
}

/// 3 (event throughput): a writer thread creates N files of 4 KiB (a new folder every 100) as fast as it can, in a
/// fresh empty folder each time: unwatched, watched by CacheWarden in a child process (the `cachewarden run` CLI),
/// watched by `inotifywait -m -r -e close_write` printing to /dev/null, and unwatched again. A discarded warm-up burst
/// comes first, and the unwatched baseline is the mean of the two unwatched runs, so that drift on a shared machine
/// does not land on one side only.
enum ThroughputBenchmark {
    /// Runs the warm-up and the four bursts; the unwatched and inotifywait trees (identical `FileStream` trees)
    /// are appended to `spares` instead of being removed.
    static func run(
        files: Int, size: Int = 4096, env: Environment, work: String, spares: inout [SpareTree],
        log: (String) -> Void
    ) throws -> ThroughputResult {
        // Warm-up (page cache, dentries, inode tables), then the first unwatched run.
        let warmup = min(files, max(1000, files / 4))
        let warmRoot = "\(work)/tp-warmup"
        try Files.makeDirectory(warmRoot)
        _ = BurstWriter.run(root: warmRoot, count: warmup, size: size)
        Files.discard(warmRoot)
        var alone = [try unwatched("\(work)/tp-alone", files: files, size: size, spares: &spares, log: log)]

        guard let cli = env.cli else {
            throw BenchError(
                "the cachewarden CLI was not found: build it with `swift build -c release --product cachewarden` or pass --cli"
            )
        }
        let program = "cachewarden CLI (\(cli))"
        let cw = try cachewarden(files: files, size: size, program: cli, work: "\(work)/tp-cw", log: log)

        var inw: WatchedRun?
        var inwNote: String?
        if let path = env.inotifywait {
            do {
                inw = try inotifywait(path, files: files, size: size, work: work, spares: &spares, log: log)
            } catch {
                inwNote = "inotifywait failed: \(error)"
                log("throughput: \(inwNote!)")
            }
        } else {
            inwNote = "inotifywait not installed (apt-get install inotify-tools)"
        }
        alone.append(try unwatched("\(work)/tp-alone-2", files: files, size: size, spares: &spares, log: log))
        return ThroughputResult(
            files: files, size: size, alone: alone, cachewarden: cw,
            inotifywait: inw, inotifywaitNote: inwNote, watcherProgram: program, warmupFiles: warmup)
    }

    /// One unwatched burst; its tree becomes a spare.
    private static func unwatched(
        _ root: String, files: Int, size: Int, spares: inout [SpareTree],
        log: (String) -> Void
    ) throws -> WatchedRun {
        try Files.makeDirectory(root)
        let burst = BurstWriter.run(root: root, count: files, size: size)
        if burst.errors == 0 && spares.count < SpareTree.kept {
            spares.append(SpareTree(path: root, files: files, size: size))
        } else {
            Files.discard(root)
        }
        log("throughput: writer alone \(Format.rate(burst.rate)) files/s (\(Format.seconds(burst.seconds)))")
        return WatchedRun(watcher: "none", writer: burst)
    }

    /// The burst under `cachewarden run` (the CLI at `program`, following with `backend`) in folder `root`, at
    /// full speed or paced at `rate` files a second; catch-up is polled with SIGUSR1 until `status` shows every
    /// file.
    static func cachewarden(
        files: Int, size: Int, program: String, work root: String, backend: String = "auto",
        rate: Double? = nil, log: (String) -> Void
    ) throws -> WatchedRun {
        let output = root + ".jsonl"
        try Files.makeDirectory(root)
        defer {
            Files.discard(root)
            Files.discard(output)
        }
        let child = try Child(
            program, ["run", "--dir", root, "--size-basis", "apparent", "--backend", backend],
            stdout: .file(output), stderr: .inherit)
        defer { child.stop() }
        let tail = try EventTail(path: output)
        try tail.awaitReady(of: child)
        let setup = Clock.seconds(since: child.startedAt)
        let cpu0 = ProcessCPU.seconds(of: child.pid) ?? 0

        let burst = BurstWriter.run(root: root, count: files, size: size, rate: rate)

        // Catch-up: ask for a status line every 10 ms until it shows every file written, or nothing moves for 2 s.
        let expected = EventTail.Totals(files: burst.files, total: Int64(burst.files * size))
        var caughtUpAt: UInt64?
        var lastChange = Clock.nanos()
        var lastSeen: (EventTail.Totals?, Double?) = (nil, nil)
        let deadline = Clock.nanos() + 120_000_000_000
        while Clock.nanos() < deadline && child.isRunning {
            tail.askStatus(of: child)
            let now = Clock.nanos()
            if tail.lastStatus == expected { caughtUpAt = now; break }
            let cpu = ProcessCPU.seconds(of: child.pid)
            if tail.lastStatus != lastSeen.0 || cpu != lastSeen.1 {
                lastSeen = (tail.lastStatus, cpu); lastChange = now
            }
            if Clock.seconds(from: lastChange, to: now) > 2 { break }
            Clock.sleep(0.008)
        }
        let cpu1 = ProcessCPU.seconds(of: child.pid) ?? cpu0
        let scan = FreshScan.of(root)
        child.stop()
        tail.poll()

        var run = WatchedRun(watcher: "cachewarden", writer: burst)
        run.cpuSeconds = cpu1 - cpu0
        run.catchUpSeconds = caughtUpAt.map { Clock.seconds(from: burst.endedAt, to: $0) }
        run.setupSeconds = setup
        run.overflows = tail.overflows
        run.rescans = tail.rescans
        run.watcherTotals = tail.lastStatus
        run.scan = scan
        run.writeLines = tail.writeLines
        run.dropped = tail.dropped
        run.errors = tail.errors
        if caughtUpAt == nil {
            run.note =
                "status never matched the files written: last \(tail.lastStatus.map { "\($0.files) files / \($0.total) B" } ?? "none"), "
                + "expected \(expected.files) / \(expected.total) B"
        }
        log(
            "throughput: cachewarden (\(backend)\(rate.map { ", paced at \(Format.rate($0))/s" } ?? "")): writer \(Format.rate(burst.rate)) files/s, caught up "
                + "\(run.catchUpSeconds.map { "+\(Format.seconds($0))" } ?? "never"), CPU \(Format.seconds(run.cpuSeconds ?? 0)), "
                + "overflow \(tail.overflows > 0 ? "yes" : "no"), exact \(run.exact == true ? "yes" : "NO")")
        return run
    }

    /// The burst under `inotifywait -m -r -e close_write` (stdout to /dev/null); caught up when its CPU time stops
    /// growing.
    private static func inotifywait(
        _ path: String, files: Int, size: Int, work: String, spares: inout [SpareTree],
        log: (String) -> Void
    ) throws -> WatchedRun {
        let root = "\(work)/tp-inw"
        try Files.makeDirectory(root)
        var spare = false
        defer { if !spare { Files.discard(root) } }
        let (child, established) = try Child.inotifywait(path, ["-m", "-r", "-e", "close_write", root])
        defer { child.stop(signal: SIGKILL, grace: 0) }
        let cpu0 = ProcessCPU.seconds(of: child.pid) ?? 0
        let burst = BurstWriter.run(root: root, count: files, size: size)

        // Settled when the CPU reading has not moved for 200 ms (4 polls); caught up at the first of those.
        var last = ProcessCPU.seconds(of: child.pid) ?? cpu0
        var lastMove = burst.endedAt
        var still = 0
        let deadline = Clock.nanos() + 60_000_000_000
        while still < 4 && Clock.nanos() < deadline {
            Clock.sleep(0.05)
            let cpu = ProcessCPU.seconds(of: child.pid) ?? last
            if cpu != last { last = cpu; lastMove = Clock.nanos(); still = 0 } else { still += 1 }
        }
        child.stop(signal: SIGKILL, grace: 0)
        if burst.errors == 0 && spares.count < SpareTree.kept {
            spares.append(SpareTree(path: root, files: files, size: size))
            spare = true
        }
        var run = WatchedRun(watcher: "inotifywait", writer: burst)
        run.cpuSeconds = last - cpu0
        run.catchUpSeconds = Clock.seconds(from: burst.endedAt, to: lastMove)
        run.setupSeconds = Clock.seconds(from: child.startedAt, to: established)
        log(
            "throughput: inotifywait: writer \(Format.rate(burst.rate)) files/s, idle after +\(Format.seconds(run.catchUpSeconds ?? 0)), "
                + "CPU \(Format.seconds(run.cpuSeconds ?? 0))")
        return run
    }
}
