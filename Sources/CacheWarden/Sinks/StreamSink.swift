import Synchronization

/// Any number of `AsyncStream`s of events; each ends when the watcher stops. A bounded stream keeps the oldest
/// waiting events and drops newer ones, counted: a `dropped` event with the count goes in first as soon as there
/// is room again (as the JSON-lines sink does for a slow reader).
public final class StreamSink: EventSink {
    fileprivate struct Consumer {
        var continuation: AsyncStream<WardenEvent>.Continuation
        /// Events dropped since the last `dropped` event went in.
        var dropped = 0
    }
    private struct State {
        var consumers: [Int: Consumer] = [:]
        var nextID = 0
        var finished = false
    }
    private let state = Mutex(State())

    public init() {}

    /// A new stream of every event from now on.
    public func makeStream(buffering: EventBuffering) -> AsyncStream<WardenEvent> {
        let policy: AsyncStream<WardenEvent>.Continuation.BufferingPolicy
        switch buffering {
        case .unbounded: policy = .unbounded
        case .bounded(let limit): policy = .bufferingOldest(max(1, limit))
        }
        let (stream, continuation) = AsyncStream<WardenEvent>.makeStream(bufferingPolicy: policy)
        let (id, finished) = state.withLock { s -> (Int, Bool) in
            s.nextID += 1
            if !s.finished { s.consumers[s.nextID] = Consumer(continuation: continuation) }
            return (s.nextID, s.finished)
        }
        if finished { continuation.finish(); return stream }
        continuation.onTermination = { @Sendable [weak self] _ in
            _ = self?.state.withLock { $0.consumers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Under the lock, so two batches never interleave in one stream and the drop counts stay exact.
    public func receive(_ events: [WardenEvent]) {
        state.withLock { s in
            for id in s.consumers.keys { s.consumers[id]?.deliver(events) }
        }
    }

    public func finish() {
        let targets = state.withLock { s -> [AsyncStream<WardenEvent>.Continuation] in
            s.finished = true
            defer { s.consumers.removeAll() }
            return s.consumers.values.map(\.continuation)
        }
        for c in targets { c.finish() }
    }
}

extension StreamSink.Consumer {
    /// Yields `events`, first a `dropped` event if any were dropped and there is room for it now.
    mutating func deliver(_ events: [WardenEvent]) {
        for event in events {
            if dropped > 0 {
                guard case .enqueued = continuation.yield(WardenEvent(.dropped(count: dropped))) else {
                    dropped += 1
                    continue
                }
                dropped = 0
            }
            if case .dropped = continuation.yield(event) { dropped += 1 }
        }
    }
}
