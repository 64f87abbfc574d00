/// How many events a stream from `Watcher.events(buffering:)` holds for a consumer that falls behind.
public enum EventBuffering: Sendable, Equatable {
    /// Every event is kept until read (memory grows with the backlog).
    case unbounded
    /// At most this many events wait; past that, newer events are dropped, counted, and a `dropped` event with
    /// the count comes before the next event the stream has room for — never a silent gap.
    case bounded(Int)
}
