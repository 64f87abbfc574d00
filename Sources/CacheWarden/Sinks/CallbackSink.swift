import Dispatch

/// Calls a closure for every event, in order, on a queue of your choice (one hop per batch, not per event).
public final class CallbackSink: EventSink {
    public let queue: DispatchQueue
    private let handler: @Sendable (WardenEvent) -> Void
    private static let marker = DispatchSpecificKey<ObjectIdentifier>()

    /// `handler` runs on `queue` (default: a private serial queue).
    public init(queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (WardenEvent) -> Void) {
        self.queue = queue ?? DispatchQueue(label: "cachewarden.callbacks")
        self.handler = handler
        self.queue.setSpecific(key: Self.marker, value: ObjectIdentifier(self))
    }

    public func receive(_ events: [WardenEvent]) {
        let handler = self.handler
        queue.async { for e in events { handler(e) } }
    }

    /// Waits until every event received so far was handed to the handler (not when called from the handler).
    public func finish() {
        if DispatchQueue.getSpecific(key: Self.marker) != ObjectIdentifier(self) { queue.sync {} }
    }
}
