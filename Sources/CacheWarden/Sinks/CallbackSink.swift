import Dispatch
import Foundation

/// Calls a closure for every event, in order, on a queue of your choice (one hop per batch, not per event).
public final class CallbackSink: EventSink {
    public let queue: DispatchQueue
    private let handler: @Sendable (WardenEvent) -> Void
    /// Marks, on the thread running this sink's handler, that it is inside it (a queue may be shared by several
    /// sinks, so nothing is stored on the queue itself).
    private let threadKey: String

    /// `handler` runs on `queue` (default: a private serial queue).
    public init(queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (WardenEvent) -> Void) {
        self.queue = queue ?? DispatchQueue(label: "cachewarden.callbacks")
        self.handler = handler
        threadKey = "cachewarden.callback.\(UUID().uuidString)"
    }

    public func receive(_ events: [WardenEvent]) {
        let handler = self.handler
        let key = threadKey
        queue.async {
            Thread.current.threadDictionary[key] = true
            defer { Thread.current.threadDictionary[key] = nil }
            for e in events { handler(e) }
        }
    }

    /// Waits until every event received so far was handed to the handler (not when called from the handler).
    public func finish() {
        if Thread.current.threadDictionary[threadKey] == nil { queue.sync {} }
    }
}
