import Dispatch

/// Calls a closure for every event, in order, on a queue of your choice (one hop per batch, not per event).
public final class CallbackSink: EventSink {
    public let queue: DispatchQueue
    private let handler: @Sendable (WardenEvent) -> Void
    /// Where the handler runs: a serial queue of this sink's own that targets `queue` (so the handler runs on
    /// `queue`, in order even when `queue` is concurrent). It carries `inHandler`, which `DispatchQueue.getSpecific`
    /// sees only from blocks of this queue: that is how `finish` knows it was called from the handler. Nothing is
    /// stored on `queue` itself, which several sinks may share (and which, if global, takes no specifics).
    private let serial: DispatchQueue
    private let inHandler = DispatchSpecificKey<Bool>()

    /// `handler` runs on `queue` (default: a private serial queue).
    public init(queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (WardenEvent) -> Void) {
        self.queue = queue ?? DispatchQueue(label: "cachewarden.callbacks")
        self.handler = handler
        serial = DispatchQueue(label: "cachewarden.callbacks.sink", target: self.queue)
        serial.setSpecific(key: inHandler, value: true)
    }

    public func receive(_ events: [WardenEvent]) {
        let handler = self.handler
        serial.async {
            for e in events { handler(e) }
        }
    }

    /// Waits until every event received so far was handed to the handler (not when called from the handler).
    public func finish() {
        if DispatchQueue.getSpecific(key: inHandler) == nil { serial.sync {} }
    }
}
