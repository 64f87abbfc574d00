import Dispatch
import Foundation
import Glibc
import Synchronization

/// CPU time and context switches of another process, all its threads, from `/proc` and its CPU clock.
///
/// `/proc/PID/stat` sums the CPU time of every thread, the exited ones included, in ticks of 10 ms; the process's
/// CPU clock (`clock_getcpuclockid`) is the same sum to the nanosecond. `/proc/PID/status` counts the
/// context switches of the main thread only, so the switches are summed over `/proc/PID/task/*/status`. A thread
/// that exits takes its counts with it: a thread on its own samples them every `interval` while `start`ed, and a
/// thread that is gone keeps its last sample (only a thread born and gone between two samples is missed).
final class ProcessActivity: Sendable {
    /// One reading: CPU seconds (user + system) and context switches since the process began.
    struct Reading: Sendable {
        /// From the CPU clock.
        var cpuSeconds: Double
        /// From `/proc/PID/stat` (utime + stime).
        var statSeconds: Double
        var voluntary: Int
        var involuntary: Int
        /// Threads seen so far (alive or not).
        var threads: Int

        var switches: Int { voluntary + involuntary }
    }

    private struct Switches: Sendable {
        var voluntary = 0
        var involuntary = 0
    }

    let pid: pid_t
    /// The last counts read of every thread seen, by thread id.
    private let counts = Locked<[Int32: Switches]>([:])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    init(pid: pid_t) {
        self.pid = pid
        sample()
    }

    /// Reads every thread's counts now.
    func sample() {
        guard let dir = opendir("/proc/\(pid)/task") else { return }
        var found: [(Int32, Switches)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let tid = Int32(name), let s = Self.switches(pid: pid, tid: tid) else { continue }
            found.append((tid, s))
        }
        closedir(dir)
        counts.withLock { map in for (tid, s) in found { map[tid] = s } }
    }

    /// CPU seconds and switches now (read afresh).
    func reading() -> Reading {
        sample()
        let (v, i, n) = counts.withLock { map in
            (map.values.reduce(0) { $0 + $1.voluntary }, map.values.reduce(0) { $0 + $1.involuntary }, map.count)
        }
        return Reading(
            cpuSeconds: ProcessCPU.clockSeconds(of: pid) ?? 0, statSeconds: ProcessCPU.seconds(of: pid) ?? 0,
            voluntary: v, involuntary: i, threads: n)
    }

    /// Samples every `interval` seconds on a thread of its own until `stop`.
    func start(every interval: Double = 0.1) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                sample()
                Clock.sleep(interval)
            }
            finished.signal()
        }
        thread.name = "bench.activity"
        thread.start()
    }

    /// Stops the sampling thread and waits for it.
    func stop() {
        guard started.load(ordering: .relaxed), !stopping.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
    }

    /// Waits until neither the CPU time nor the switches have moved for `quiet` seconds (`limit` at most); returns
    /// `Clock.nanos()` at the last move seen.
    @discardableResult
    func waitUntilQuiet(_ quiet: Double, limit: Double = 10) -> UInt64 {
        let deadline = Clock.nanos() + UInt64(limit * 1e9)
        var last = reading()
        var lastMove = Clock.nanos()
        while Clock.nanos() < deadline {
            Clock.sleep(0.025)
            let now = reading(), at = Clock.nanos()
            if now.cpuSeconds != last.cpuSeconds || now.switches != last.switches {
                last = now
                lastMove = at
            } else if Clock.seconds(from: lastMove, to: at) >= quiet {
                break
            }
        }
        return lastMove
    }

    /// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of one thread; `nil` when it is gone.
    private static func switches(pid: pid_t, tid: Int32) -> Switches? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8) else {
            return nil
        }
        var s = Switches()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("voluntary_ctxt_switches:") {
                s.voluntary = Int(line.split(separator: "\t").last ?? "") ?? 0
            } else if line.hasPrefix("nonvoluntary_ctxt_switches:") {
                s.involuntary = Int(line.split(separator: "\t").last ?? "") ?? 0
            }
        }
        return s
    }
}
