import Dispatch

/// How a kernel backend holds its reading, shared by inotify and fanotify: nested suspensions (while a trim
/// deletes, so its own deletions do not wake the reader one by one) and, only while changes come fast, a short
/// rest between batches, so that a busy writer's changes arrive in batches. `hold` and `release` stop and start
/// the reading (the backend disarms and arms its `ReadinessSet`); they run on the first suspension and the
/// last resume. Confined to the engine's queue.
///
/// Each wake-up costs several thread switches (libdispatch's manager thread takes the epoll wake-up, a worker runs
/// the handler, the manager re-arms the source), so a timer is used only where it saves wake-ups: a batch that
/// read fewer than `restChanges` changes per `delay` is followed by no rest (at 400 files/s a rest would gather
/// one file, and cost a timer's wake-ups on top of the read's) — unless the reader wakes up at least twice per
/// `delay` over a few rests' time, however little each read finds. A rest reads at its end itself, on the timer's
/// thread, without arming (no epoll wake-up, no re-arm); it rests again while each rest gathers more than a file's
/// creation and close (`stayChanges`), and arms once one does not.
/// `@unchecked Sendable` by that confinement (`queue`, the engine's), checked with `assertOnQueue` (debug builds).
final class ReadPacing: @unchecked Sendable {
    /// Changes a rest must be expected to gather (at the rate of the batch just read) to be taken; the batch just
    /// read must hold half as many (a file's creation and its close read in two wake-ups a moment apart is not a
    /// fast stream).
    static let restChanges = 8

    private let queue: DispatchQueue
    private let delay: DispatchTimeInterval
    private let delayNanoseconds: UInt64
    private let hold: () -> Void
    private let release: () -> Void
    /// Monotonic nanoseconds, what rates are judged by (tests give their own: rates without sleeping).
    private let now: @Sendable () -> UInt64
    /// The backend's read pass, run at the end of a rest (set once the backend starts).
    var read: (() -> Void)?
    private var suspensions = 0
    private var resting = false
    /// When the last batch ended (uptime nanoseconds; 0: none yet).
    private var lastBatchEnd: UInt64 = 0
    /// The changes read since `windowStart`, over a few rests' time: a steady stream read a few changes a wake-up
    /// (a file at a time, each wake-up under `restChanges / 2`) is fast all the same when they add up.
    private var windowStart: UInt64 = 0
    private var windowChanges = 0
    private var windowWakeUps = 0
    private var steadyFast = false
    static let windowRests: UInt64 = 4

    init(
        queue: DispatchQueue, delay: DispatchTimeInterval,
        now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        hold: @escaping () -> Void, release: @escaping () -> Void
    ) {
        self.queue = queue
        self.now = now
        self.delay = delay
        if case .milliseconds(let ms) = delay {
            delayNanoseconds = UInt64(ms) * 1_000_000
        } else if case .microseconds(let us) = delay {
            delayNanoseconds = UInt64(us) * 1_000
        } else {
            delayNanoseconds = 2_000_000
        }
        self.hold = hold
        self.release = release
    }

    var isSuspended: Bool { suspensions > 0 }

    /// Whether reading is held only by a rest (the rest's end may read).
    var isOnlyResting: Bool { resting && suspensions == 1 }

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

    /// Read passes one wake-up of a kernel backend's source runs at most (what came while a batch was processed is
    /// read in the same wake-up); a rest's end runs one.
    static let passesPerWakeUp = 4

    /// One wake-up's reading, shared by the kernel backends: up to `passes` read passes while reading is not held
    /// (a rest's own read counts as not held), stopping at one that found nothing, then whether reading rests.
    /// `pass(first)` reads and delivers one batch: the changes read, whether any read found records, and what the
    /// engine asked; nil when nothing can be read (no deliverer yet).
    func drain(
        passes: Int, mayRest: Bool, _ pass: (_ first: Bool) -> (changes: Int, readAny: Bool, pace: BackendPace)?
    ) {
        var changes = 0
        var pace = BackendPace.rest
        for i in 0..<passes {
            guard !isSuspended || isOnlyResting, let done = pass(i == 0) else { break }
            changes += done.changes
            if done.pace == .keepReading { pace = .keepReading }
            if !done.readAny { break }
        }
        batchEnded(changes: changes, pace: pace, mayRest: mayRest)
    }

    /// A batch of `changes` ended (`pace`: what the engine asked); rests if changes come fast enough for a rest to
    /// gather a batch's worth and `mayRest`, otherwise ends a rest under way (reading is armed again). A rest's own
    /// read (`resting`) rests again while it gathered `stayChanges`: armed instead, those would have cost a wake-up
    /// or more each.
    func batchEnded(changes: Int, pace: BackendPace, mayRest: Bool) {
        assertOnQueue(queue)
        let now = self.now()
        let since = lastBatchEnd == 0 ? UInt64.max : now &- lastBatchEnd
        lastBatchEnd = now
        let steady = noteInWindow(changes, wokeUp: !resting, now: now)
        // changes / since ≥ restChanges / delay, without dividing (a product past UInt64 is a long pause: slow).
        let gathered = UInt64(max(0, changes)).multipliedReportingOverflow(by: delayNanoseconds)
        let wanted = UInt64(Self.restChanges).multipliedReportingOverflow(by: since)
        let fast =
            resting
            ? changes >= Self.stayChanges
            : steady
                || (changes >= Self.restChanges / 2 && !wanted.overflow
                    && (gathered.overflow || gathered.partialValue >= wanted.partialValue))
        if fast && pace == .rest && mayRest {
            rest()
        } else if resting {
            resting = false
            resume()
        }
    }

    /// Changes a rest's own read must gather for reading to rest again (more than one file's creation and close).
    static let stayChanges = 3

    /// Counts `changes` and, for a wake-up of the armed reader (`wokeUp`), the wake-up in the window; when it has
    /// lasted `windowRests` rests, decides for the next window whether the stream is fast: a rest would gather
    /// `restChanges`, or wake-ups came at least twice per `delay` (a rest then replaces two or more of them by one
    /// timer, however few changes each read: fanotify merges a file's records into one). Returns that decision.
    private func noteInWindow(_ changes: Int, wokeUp: Bool, now: UInt64) -> Bool {
        if windowStart == 0 { windowStart = now }
        windowChanges += max(0, changes)
        if wokeUp && changes > 0 { windowWakeUps += 1 }
        let elapsed = now &- windowStart
        if elapsed >= delayNanoseconds * Self.windowRests {
            // changes / elapsed ≥ restChanges / delay, without dividing.
            let gathered = UInt64(windowChanges).multipliedReportingOverflow(by: delayNanoseconds)
            let wanted = UInt64(Self.restChanges).multipliedReportingOverflow(by: elapsed)
            steadyFast =
                (!wanted.overflow && (gathered.overflow || gathered.partialValue >= wanted.partialValue))
                || UInt64(windowWakeUps) >= 2 * Self.windowRests
            (windowStart, windowChanges, windowWakeUps) = (now, 0, 0)
        }
        return steadyFast
    }

    /// Holds reading for `delay`, then reads (`read`) without arming; what that batch finds decides the next rest.
    private func rest() {
        if !resting {
            resting = true
            suspend()
        }
        queue.asyncAfter(deadline: .now() + delay) { @Sendable [weak self] in
            guard let self, self.resting else { return }
            if self.isOnlyResting, let read = self.read {
                read() // ends with `batchEnded`: rests again or arms
            } else {
                self.resting = false
                self.resume()
            }
        }
    }

    /// Forgets every suspension and a rest under way (the backend stopped). Not checked: a backend's `deinit`,
    /// on any thread, calls it too, when nothing else can reach either.
    func reset() {
        suspensions = 0
        resting = false
        lastBatchEnd = 0
        (windowStart, windowChanges, windowWakeUps, steadyFast) = (0, 0, 0, false)
    }
}
