import Dispatch
import Synchronization
@testable import CacheWarden

/// A clock that moves only when a test says so. Its file time starts at the real one (files the test writes are
/// "now"), its uptime at an arbitrary point; `advance` fires every timer due on the way, in deadline order, each on
/// its queue (`sync`: called off the engine's queue), with the clock set to that timer's deadline — so once
/// `advance` returns, the engine has run every wake-up of the step.
final class ManualClock: WardenClock {
    private struct Armed {
        var deadline: UInt64
        let interval: UInt64?
        let queue: DispatchQueue
        let handler: @Sendable () -> Void
    }

    private struct Timeline {
        var uptime: UInt64 = 1_000 * 1_000_000_000
        var fileTime: Int64
        var armed: [Int: Armed] = [:]
        var nextID = 0
    }

    private let timeline: Mutex<Timeline>

    init() { timeline = Mutex(Timeline(fileTime: SystemClock().fileTimeNanoseconds)) }

    var uptimeNanoseconds: UInt64 { timeline.withLock { $0.uptime } }
    var fileTimeNanoseconds: Int64 { timeline.withLock { $0.fileTime } }

    /// How many timers are armed (a wake-up the engine asked for and has not cancelled).
    var armedCount: Int { timeline.withLock { $0.armed.count } }

    func schedule(
        at deadline: UInt64, repeating interval: UInt64?, on queue: DispatchQueue,
        _ handler: @escaping @Sendable () -> Void
    ) -> ClockTimer {
        let id = timeline.withLock { t in
            defer { t.nextID += 1 }
            t.armed[t.nextID] = Armed(
                deadline: deadline, interval: interval.map { max(1, $0) }, queue: queue, handler: handler)
            return t.nextID
        }
        return ClockTimer { [self] in _ = timeline.withLock { $0.armed.removeValue(forKey: id) } }
    }

    /// Moves both clocks forward by `seconds`, firing what falls due.
    func advance(by seconds: Double) {
        let step = UInt64(seconds * 1e9)
        let target = uptimeNanoseconds + step
        while let (queue, handler) = nextDue(by: target) { queue.sync(execute: handler) }
        set(uptime: target)
    }

    /// The earliest timer due by `target`, with the clock moved to its deadline (a repeating one re-armed).
    private func nextDue(by target: UInt64) -> (DispatchQueue, @Sendable () -> Void)? {
        timeline.withLock { t in
            guard
                let (id, due) = t.armed.filter({ $0.value.deadline <= target }).min(by: {
                    ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key)
                })
            else { return nil }
            Self.move(&t, to: due.deadline)
            if let interval = due.interval { t.armed[id]?.deadline += interval } else { t.armed[id] = nil }
            return (due.queue, due.handler)
        }
    }

    private func set(uptime: UInt64) { timeline.withLock { Self.move(&$0, to: uptime) } }

    private static func move(_ t: inout Timeline, to uptime: UInt64) {
        guard uptime > t.uptime else { return }
        t.fileTime += Int64(uptime - t.uptime)
        t.uptime = uptime
    }
}
