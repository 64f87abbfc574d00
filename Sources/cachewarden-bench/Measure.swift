import Foundation
import Glibc

/// Readings of `CLOCK_MONOTONIC`, the one clock every benchmark uses.
enum Clock {
    /// Nanoseconds on `CLOCK_MONOTONIC`.
    static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Seconds from `start` (a `nanos()` reading) to now.
    static func seconds(since start: UInt64) -> Double {
        Double(nanos() &- start) / 1e9
    }

    /// Seconds between two `nanos()` readings (0 when `end` is before `start`).
    static func seconds(from start: UInt64, to end: UInt64) -> Double {
        end >= start ? Double(end - start) / 1e9 : 0
    }

    /// Runs `body` and returns its result with the seconds it took.
    static func time<T>(_ body: () throws -> T) rethrows -> (value: T, seconds: Double) {
        let start = nanos()
        let value = try body()
        return (value, seconds(since: start))
    }

    /// Sleeps for `seconds` (at least a microsecond).
    static func sleep(_ seconds: Double) {
        usleep(useconds_t(max(1, seconds * 1e6)))
    }
}

/// Medians and percentiles of small samples.
enum Stats {
    /// The median (the mean of the two middle values for an even count); 0 for an empty sample.
    static func median(_ xs: [Double]) -> Double {
        guard !xs.isEmpty else { return 0 }
        let s = xs.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The nearest-rank `p`-th percentile (`p` in 0…100); 0 for an empty sample.
    static func percentile(_ xs: [Double], _ p: Double) -> Double {
        guard !xs.isEmpty else { return 0 }
        let s = xs.sorted()
        let rank = Int((p / 100 * Double(s.count)).rounded(.up))
        return s[min(max(rank, 1), s.count) - 1]
    }
}

/// Resident memory of this process, from `/proc/self/status`.
struct MemorySample: Codable, Sendable {
    /// `VmRSS`: resident set now, bytes.
    var rssBytes: Int64
    /// `VmHWM`: peak resident set so far, bytes.
    var hwmBytes: Int64

    /// The current figures of this process (zeros when `/proc` cannot be read).
    static func current() -> MemorySample { of(nil) }

    /// The current figures of process `pid` (this one when nil).
    static func of(_ pid: pid_t?) -> MemorySample {
        guard let text = try? String(contentsOfFile: "/proc/\(pid.map(String.init) ?? "self")/status", encoding: .utf8)
        else {
            return MemorySample(rssBytes: 0, hwmBytes: 0)
        }
        func field(_ name: String) -> Int64 {
            for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
                let digits =
                    line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "0"
                return (Int64(digits) ?? 0) * 1024 // the kernel reports kB
            }
            return 0
        }
        return MemorySample(rssBytes: field("VmRSS"), hwmBytes: field("VmHWM"))
    }
}

/// CPU time of another process, from `/proc/<pid>/stat`.
enum ProcessCPU {
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User plus system CPU seconds used so far by `pid` (its own threads, not its children); `nil` when gone.
    static func seconds(of pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)" the fields start at field 3 (state); utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / ticksPerSecond
    }

    /// The same from the process's CPU clock (`clock_getcpuclockid`), to the nanosecond where `/proc/PID/stat`
    /// counts ticks of 10 ms; `nil` when gone.
    static func clockSeconds(of pid: pid_t) -> Double? {
        var id = clockid_t()
        var ts = timespec()
        guard clock_getcpuclockid(pid, &id) == 0, clock_gettime(id, &ts) == 0 else { return nil }
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
