import Synchronization

/// A value behind a `Mutex`, in a class so that escaping closures (threads, handlers) can share it.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// A lock around `value`.
    init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with exclusive access to the value.
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { value in body(&value) }
    }

    /// A copy of the value.
    var value: Value { withLock { $0 } }
}
