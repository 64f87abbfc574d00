import CacheWardenFilesystem
import Dispatch

/// The real clocks and Dispatch timers: what every watcher runs on unless a test injects its own.
struct SystemClock: WardenClock {
    /// Wake-ups are decisions on whole seconds: a little slack lets the kernel batch them.
    static let leeway = DispatchTimeInterval.milliseconds(50)

    var uptimeNanoseconds: UInt64 { DispatchTime.now().uptimeNanoseconds }

    var fileTimeNanoseconds: Int64 { Syscall.fileClockNanoseconds() }

    func schedule(
        at deadline: UInt64, repeating interval: UInt64?, on queue: DispatchQueue,
        _ handler: @escaping @Sendable () -> Void
    ) -> ClockTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let start = DispatchTime(uptimeNanoseconds: deadline)
        if let interval {
            timer.schedule(deadline: start, repeating: .nanoseconds(Int(clamping: interval)), leeway: Self.leeway)
        } else {
            timer.schedule(deadline: start, leeway: Self.leeway)
        }
        timer.setEventHandler(handler: handler)
        timer.resume()
        return ClockTimer { timer.cancel() }
    }
}
