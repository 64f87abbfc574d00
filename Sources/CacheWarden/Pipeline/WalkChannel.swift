import CacheWardenFilesystem
import Dispatch
import Synchronization

/// A bounded hand-off of walked directories from the walking threads to the watcher's queue. The queue takes
/// whatever is there when it comes back for more, and when nothing is, sleeps until `batch` directories (or the
/// end of the walk) are there: waking it for each directory cost a futex call and two context switches — on a
/// tree of small folders, as much CPU as reading the folder.
final class WalkChannel: Sendable {
    static let batch = 64

    private struct State {
        var items: [WalkedDirectory<WatchAttempt>] = []
        var finished = false
        var consumerWaiting = false
    }
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    private let space: DispatchSemaphore
    let cancelled = Atomic<Bool>(false)

    init(capacity: Int = 256) { space = DispatchSemaphore(value: max(capacity, Self.batch)) }

    func put(_ d: WalkedDirectory<WatchAttempt>) {
        space.wait()
        let wake = state.withLock { s in
            s.items.append(d)
            guard s.consumerWaiting, s.items.count >= Self.batch else { return false }
            s.consumerWaiting = false
            return true
        }
        if wake { available.signal() }
    }

    func finish() {
        let wake = state.withLock { s in
            s.finished = true
            defer { s.consumerWaiting = false }
            return s.consumerWaiting
        }
        if wake { available.signal() }
    }

    /// The directories put since the last call, in the order they were put; empty once the walk finished and
    /// everything was taken.
    func take() -> [WalkedDirectory<WatchAttempt>] {
        while true {
            let (items, over) = state.withLock { s -> ([WalkedDirectory<WatchAttempt>], Bool) in
                if !s.items.isEmpty {
                    defer { s.items.removeAll(keepingCapacity: true) }
                    return (s.items, false)
                }
                s.consumerWaiting = !s.finished
                return ([], s.finished)
            }
            if !items.isEmpty {
                for _ in items { space.signal() }
                return items
            }
            if over { return [] }
            available.wait()
        }
    }
}
