import Glibc

/// A value behind a pthread mutex, with one condition variable on the monotonic clock for waiting until the value
/// says so. `Synchronization.Mutex` has no condition, and a waiter without one can only poll.
///
/// `@unchecked Sendable`: not confined to a queue; every access to `value` holds `mutex`.
package final class ConditionLock<Value: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held; with `wakingWaiters`, every waiter then checks its condition again.
    package func withLock<R>(wakingWaiters: Bool = false, _ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer {
            if wakingWaiters { pthread_cond_broadcast(condition) }
            pthread_mutex_unlock(mutex)
        }
        return try body(&value)
    }

    /// Runs `body` with the lock held and wakes every waiter if it returns true: one lock for a change that only
    /// sometimes concerns the waiters.
    package func update(_ body: (inout Value) -> Bool) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if body(&value) { pthread_cond_broadcast(condition) }
    }

    /// Sleeps until `ready` holds (checked under the lock, again at each wake-up) or `timeout` seconds have passed
    /// (nil: no limit), then runs `body` with the lock still held; `body`'s second argument says whether `ready`
    /// held.
    package func wait<R>(
        until ready: (Value) -> Bool, timeout: Double? = nil,
        _ body: (inout Value, Bool) throws -> R
    ) rethrows -> R {
        let deadline = timeout.map(Self.monotonicDeadline)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(value) {
            if var deadline {
                if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
        return try body(&value, ready(value))
    }

    /// `seconds` from now on the monotonic clock, the clock the condition waits on.
    private static func monotonicDeadline(_ seconds: Double) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = Int64(now.tv_nsec) + Int64((min(max(0, seconds), 1e9) * 1e9).rounded())
        return timespec(
            tv_sec: now.tv_sec + Int(nanoseconds / 1_000_000_000),
            tv_nsec: Int(nanoseconds % 1_000_000_000))
    }
}
