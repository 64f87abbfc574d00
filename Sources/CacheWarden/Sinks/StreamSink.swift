import Foundation
import Synchronization

/// Any number of `AsyncStream`s of events; each ends when the watcher stops.
public final class StreamSink: EventSink {
    private struct State {
        var continuations: [UUID: AsyncStream<WardenEvent>.Continuation] = [:]
        var finished = false
    }
    private let state = Mutex(State())

    public init() {}

    /// A new stream of every event from now on, holding up to `buffer` events for a slow consumer (the oldest are
    /// dropped past that).
    public func makeStream(buffer: Int = 65_536) -> AsyncStream<WardenEvent> {
        let (stream, continuation) = AsyncStream<WardenEvent>.makeStream(bufferingPolicy: .bufferingNewest(buffer))
        let id = UUID()
        let finished = state.withLock { s -> Bool in
            if !s.finished { s.continuations[id] = continuation }
            return s.finished
        }
        if finished { continuation.finish(); return stream }
        continuation.onTermination = { @Sendable [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    public func receive(_ events: [WardenEvent]) {
        let targets = state.withLock { Array($0.continuations.values) }
        for c in targets { for e in events { c.yield(e) } }
    }

    public func finish() {
        let targets = state.withLock { s -> [AsyncStream<WardenEvent>.Continuation] in
            s.finished = true
            defer { s.continuations.removeAll() }
            return Array(s.continuations.values)
        }
        for c in targets { c.finish() }
    }
}
