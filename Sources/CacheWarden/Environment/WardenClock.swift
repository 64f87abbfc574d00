import Dispatch

/// Time as the engine and the policies read it, and the timers the engine arms on it.
///
/// Two clocks, because they answer different questions: deadlines, idle waits and pacing need a clock no one can
/// set back (`uptimeNanoseconds`), while ages are compared with the times the kernel stamps on files
/// (`fileTimeNanoseconds`).
///
/// Why the clock also schedules: every policy wake-up (a deferred trim, the next `delete_rate` pass, the expiry and
/// low-disk ticks, an audit) is a timer the engine arms. Injecting only the reading of time would let a test set
/// the time and still leave it waiting for a Dispatch timer; calling `decide` directly would skip the engine's
/// wiring of those timers, which is where the timing bugs are. With scheduling on the clock, a test's manual clock
/// runs the wake-ups due in a step on the engine's queue before its `advance` returns, so the same code paths run
/// in milliseconds.
protocol WardenClock: Sendable {
    /// Monotonic nanoseconds (`DispatchTime`'s uptime): deadlines, idle waits, pacing, rates.
    var uptimeNanoseconds: UInt64 { get }
    /// Nanoseconds since 1970 on the clock file times are stamped with: ages (`max_age`, `min_age`, opens).
    var fileTimeNanoseconds: Int64 { get }
    /// Runs `handler` on `queue` at `deadline` (uptime nanoseconds), then every `interval` nanoseconds if one is
    /// given, until the returned timer is cancelled.
    func schedule(
        at deadline: UInt64, repeating interval: UInt64?, on queue: DispatchQueue,
        _ handler: @escaping @Sendable () -> Void
    ) -> ClockTimer
}

extension WardenClock {
    /// A one-shot timer.
    func schedule(at deadline: UInt64, on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> ClockTimer
    {
        schedule(at: deadline, repeating: nil, on: queue, handler)
    }
}
