/// Where events go: the last stage of the pipeline. A watcher hands every batch of events, in order, to each of
/// its sinks from its queue; a sink must not block (hand the batch to a thread or queue of its own).
/// Sinks in the library: `CallbackSink` (a closure on a queue of your choice), `StreamSink` (`AsyncStream`s),
/// `JSONLinesSink` (the exact lines `cachewarden run` prints, to a file descriptor).
public protocol EventSink: Sendable {
    /// Receives the next events, in order.
    func receive(_ events: [WardenEvent])
    /// The watcher stopped: no more events. Return once everything received has been handed on.
    func finish()
}
