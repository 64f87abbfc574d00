import Glibc

/// Time arithmetic that cannot trap. Times are nanoseconds — since 1970 on the clock file times are stamped with
/// (`Int64`), or since boot on the monotonic clock (`UInt64`) — and durations are whole seconds from the settings.
/// Where they combine (an age cutoff `now − max_age`, a deadline `now + interval`, seconds made nanoseconds, a
/// file's `timespec`), the result saturates at the type's bounds instead of overflowing, which would trap and end
/// the process: a deadline past the end of the clock is never reached, and a cutoff before its start finds nothing
/// old enough. The config file bounds every duration (`DurationKind`), so its values never come near; this keeps
/// settings built in code, and file times past the year 2262, from taking the watcher down.
package enum Nanoseconds {
    package static let perSecond: Int64 = 1_000_000_000

    /// `seconds` in nanoseconds.
    package static func of(seconds: Int64) -> Int64 {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: perSecond)
        return overflow ? (seconds < 0 ? .min : .max) : product
    }

    /// A time as the kernel gives it (file times, clock readings), in nanoseconds.
    package static func of(_ time: timespec) -> Int64 {
        adding(of(seconds: Int64(time.tv_sec)), Int64(time.tv_nsec))
    }

    /// `seconds` as a span of the monotonic clock (a negative span is none).
    package static func span(seconds: Int64) -> UInt64 { UInt64(max(0, of(seconds: seconds))) }

    /// `seconds` (a fraction, e.g. systemd's watchdog interval) as a span of the monotonic clock.
    package static func span(timeInterval seconds: Double) -> UInt64 {
        let nanoseconds = seconds * Double(perSecond)
        guard nanoseconds > 0 else { return 0 }
        return nanoseconds < 0x1p64 ? UInt64(nanoseconds) : .max
    }

    /// The time `seconds` before `time` on the file clock: an age cutoff.
    package static func before(_ time: Int64, seconds: Int64) -> Int64 { subtracting(time, of(seconds: seconds)) }

    /// The monotonic time `span` nanoseconds after `time`: a deadline.
    package static func after(_ time: UInt64, _ span: UInt64) -> UInt64 {
        let (sum, overflow) = time.addingReportingOverflow(span)
        return overflow ? .max : sum
    }

    /// The monotonic time `seconds` after `time`: a deadline.
    package static func after(_ time: UInt64, seconds: Int64) -> UInt64 { after(time, span(seconds: seconds)) }

    /// `a + b`, saturating.
    package static func adding(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? .min : .max) : sum
    }

    /// `a − b`, saturating.
    package static func subtracting(_ a: Int64, _ b: Int64) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }
}
