import Dispatch
import Synchronization

/// The stack of directories shared by parallel walkers, with the count of directories being read so that an
/// empty stack is told apart from a finished walk.
final class SharedWork: Sendable {
    private struct State {
        var stack: [TreeWalker.Pending]
        var busy = 0
    }
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)

    init(_ top: TreeWalker.Pending) { state = Mutex(State(stack: [top])) }

    /// The next directory to read, waiting while others may still add some; nil when the walk is over.
    func next() -> TreeWalker.Pending? {
        while true {
            let (item, over) = state.withLock { s -> (TreeWalker.Pending?, Bool) in
                if let item = s.stack.popLast() { s.busy += 1; return (item, false) }
                return (nil, s.busy == 0)
            }
            if let item { return item }
            if over { wake.signal(); return nil } // pass the news on to the other walkers
            wake.wait()
        }
    }

    /// Marks one directory read, making its subdirectories available.
    func finished(adding children: some Sequence<TreeWalker.Pending>) {
        let (added, over) = state.withLock { s -> (Int, Bool) in
            let before = s.stack.count
            s.stack.append(contentsOf: children)
            s.busy -= 1
            return (s.stack.count - before, s.stack.isEmpty && s.busy == 0)
        }
        for _ in 0..<(over ? 1 : min(added, 2)) { wake.signal() }
    }
}

/// A bounded hand-off of walked directories from the walking threads to the watcher's queue. The queue takes
/// whatever is there when it comes back for more, and when nothing is, sleeps until `batch` directories (or the
/// end of the walk) are there: waking it for each directory cost a futex call and two context switches — on a
/// tree of small folders, as much CPU as reading the folder.
final class WalkChannel: Sendable {
    static let batch = 64

    private struct State {
        var items: [WalkedDirectory] = []
        var finished = false
        var consumerWaiting = false
    }
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    private let space: DispatchSemaphore
    let cancelled = Atomic<Bool>(false)

    init(capacity: Int = 256) { space = DispatchSemaphore(value: max(capacity, Self.batch)) }

    func put(_ d: WalkedDirectory) {
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
    func take() -> [WalkedDirectory] {
        while true {
            let (items, over) = state.withLock { s -> ([WalkedDirectory], Bool) in
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
