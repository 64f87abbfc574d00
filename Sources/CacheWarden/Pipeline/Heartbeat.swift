import CacheWardenFilesystem
import Dispatch
import Glibc
import Synchronization

/// A watchdog's heartbeat: `beat` every `interval`, from a thread of its own that sleeps to absolute deadlines —
/// not a Dispatch timer on the watched queue, whose beats waited for the work ahead of them and for a worker thread,
/// and had 50 ms of leeway — yet only while the watched queue answers. Each beat that finds no probe waiting sends
/// one through the queue; while a probe has waited longer than `interval` (the queue is stuck in a trim, a scan, a
/// hook), the beats stop, and the probe's answer beats at once: a queue busy a little longer than `interval` costs
/// no gap of two intervals. Not on the engine's `WardenClock`: a watchdog answers to real time, and a manual clock
/// would silence it.
final class Heartbeat: Sendable {
    private struct Probe {
        /// When the probe still unanswered went out (monotonic nanoseconds); nil when none waits.
        var sent: UInt64?
        /// A beat was held back for it.
        var heldBack = false
    }

    private let probe = Mutex(Probe())
    private let cancelled = Atomic<Bool>(false)
    private let watched: DispatchQueue
    private let interval: UInt64
    private let beat: @Sendable () -> Void

    /// Starts beating now, then every `seconds`.
    init(every seconds: Double, watching watched: DispatchQueue, _ beat: @escaping @Sendable () -> Void) {
        self.watched = watched
        self.beat = beat
        interval = Nanoseconds.span(timeInterval: max(0.001, seconds))
        let thread = Thread { [self] in run() }
        thread.name = "cw-heartbeat"
        thread.start()
    }

    /// Stops the beats for good (the thread ends at its next wake-up).
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    private func run() {
        var next = Self.now()
        while !cancelled.load(ordering: .relaxed) {
            tick()
            next += interval
            // After a stall of the whole process, on from now: no burst of the beats it missed.
            if next < Self.now() { next = Self.now() + interval }
            var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
        }
    }

    private func tick() {
        let now = Self.now()
        let (beating, probing) = probe.withLock { p -> (Bool, Bool) in
            guard let sent = p.sent else {
                p.sent = now
                return (true, true)
            }
            if now - sent > interval { p.heldBack = true } // the watched queue is stuck
            return (!p.heldBack, false)
        }
        if probing { watched.async { [self] in answered() } }
        if beating { beat() }
    }

    /// On the watched queue: it answers.
    private func answered() {
        let heldBack = probe.withLock { p in
            defer { p = Probe() }
            return p.heldBack
        }
        if heldBack && !cancelled.load(ordering: .relaxed) { beat() }
    }

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
