/// A timer armed on a `WardenClock`; it fires until cancelled. Holding it keeps a system timer alive. Not
/// `Sendable`: like the timers it stands for, it belongs to the engine's queue.
struct ClockTimer {
    let cancel: () -> Void
}
