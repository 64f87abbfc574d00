import Dispatch
import Synchronization

/// The stack of directories shared by parallel walkers, with the count of directories being read so that an
/// empty stack is told apart from a finished walk. (`package` and generic: the benchmark's floor walk shares its
/// directories, open descriptors, the same way.)
package final class SharedWork<Item: Sendable>: Sendable {
    private struct State {
        var stack: [Item]
        var busy = 0
    }
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)

    package init(_ top: Item) { state = Mutex(State(stack: [top])) }

    /// The next directory to read, waiting while others may still add some; nil when the walk is over.
    package func next() -> Item? {
        while true {
            let (item, over) = state.withLock { s -> (Item?, Bool) in
                if let item = s.stack.popLast() { s.busy += 1; return (item, false) }
                return (nil, s.busy == 0)
            }
            if let item { return item }
            if over { wake.signal(); return nil } // pass the news on to the other walkers
            wake.wait()
        }
    }

    /// Marks one directory read, making its subdirectories available.
    package func finished(adding children: some Sequence<Item>) {
        let (added, over) = state.withLock { s -> (Int, Bool) in
            let before = s.stack.count
            s.stack.append(contentsOf: children)
            s.busy -= 1
            return (s.stack.count - before, s.stack.isEmpty && s.busy == 0)
        }
        for _ in 0..<(over ? 1 : min(added, 2)) { wake.signal() }
    }
}
