import Dispatch

/// How a kernel backend holds its reading, shared by inotify and fanotify: nested suspensions (while a trim
/// deletes, so its own deletions do not wake the reader one by one) and a short rest after a batch, so that a busy
/// writer's changes arrive in batches. `hold` and `release` stop and start the reading (the backend disarms and
/// arms its `OneShotReadiness`); they run on the first suspension and the last resume. Confined to the engine's
/// queue.
/// `@unchecked Sendable` by that confinement (`queue`, the engine's), checked with `assertOnQueue` (debug builds).
final class ReadPacing: @unchecked Sendable {
    private let queue: DispatchQueue
    private let delay: DispatchTimeInterval
    private let hold: () -> Void
    private let release: () -> Void
    private var suspensions = 0
    private var resting = false

    init(queue: DispatchQueue, delay: DispatchTimeInterval, hold: @escaping () -> Void, release: @escaping () -> Void) {
        self.queue = queue
        self.delay = delay
        self.hold = hold
        self.release = release
    }

    var isSuspended: Bool { suspensions > 0 }

    func suspend() {
        assertOnQueue(queue)
        suspensions += 1
        if suspensions == 1 { hold() }
    }

    func resume() {
        assertOnQueue(queue)
        guard suspensions > 0 else { return }
        suspensions -= 1
        if suspensions == 0 { release() }
    }

    /// Holds reading for `delay` (once: a rest already under way is not extended).
    func rest() {
        assertOnQueue(queue)
        guard !resting else { return }
        resting = true
        suspend()
        queue.asyncAfter(deadline: .now() + delay) { @Sendable [weak self] in
            guard let self, self.resting else { return }
            self.resting = false
            self.resume()
        }
    }

    /// Forgets every suspension and a rest under way (the backend stopped). Not checked: a backend's `deinit`,
    /// on any thread, calls it too, when nothing else can reach either.
    func reset() {
        suspensions = 0
        resting = false
    }
}
