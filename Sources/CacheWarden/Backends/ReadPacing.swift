import Dispatch

/// How a kernel backend holds its reading, shared by inotify and fanotify: nested suspensions (while a trim
/// deletes, so its own deletions do not wake the reader one by one) and, while changes keep coming, a rest between
/// batches, so that a writer's changes arrive in batches. `hold` and `release` stop and start the reading (the
/// backend disarms and arms its `ReadinessSet`); they run on the first suspension and the last resume. Confined to
/// the engine's queue.
///
/// Each wake-up of the armed reader costs three thread switches (libdispatch's manager thread takes the epoll
/// wake-up, a worker runs the handler, the manager is woken again to re-arm the one-shot source), and a file's
/// creation and its close often come in two wake-ups. A rest costs one timer's wake-up and reads at its end itself,
/// on the timer's thread, without arming (no epoll wake-up, no re-arm), so it pays wherever it replaces two
/// wake-ups or more. Two lengths:
/// - a **short rest** (`delay`, 2 ms) while changes come fast: a rest would gather `restChanges`, or the reader
///   wakes up at least twice per `delay` however little each read finds (fanotify merges a file's records into
///   one). Short, because a fast writer fills a quota quickly.
/// - a **long rest** (`lingerDelay`, 40 ms) while a steady stream wakes the reader at least twice in a window
///   (four short rests' time, 8 ms: wake-ups under 8 ms apart, ~125 a second and up; a file every few
///   milliseconds: at 400 files/s one rest takes the place of some thirty wake-ups). What it costs is the lines'
///   latency: up to `lingerDelay` more, only while changes keep coming at that rate.
/// A rest's own read rests again while it gathered more than a file's creation and close (`stayChanges`): a short
/// rest if it gathered at the fast rate, the same rest otherwise; it arms once a rest gathers less. Within reach of a
/// quota's trim level the engine asks for no long rest (`BackendPace.restBriefly`), near it for none
/// (`keepReading`), so the write that crosses is read as soon as it is queued; an idle watcher schedules nothing.
/// One timer serves the rests: it repeats while rests of one length follow each other.
/// `@unchecked Sendable` by that confinement (`queue`, the engine's), checked with `assertOnQueue` (debug builds).
final class ReadPacing: @unchecked Sendable {
    /// Changes a short rest must be expected to gather (at the rate of the batch just read) to be taken; the batch
    /// just read must hold half as many (a file's creation and its close read in two wake-ups a moment apart is not
    /// a fast stream).
    static let restChanges = 8
    /// Changes a rest's own read must gather for reading to rest again (more than one file's creation and close).
    static let stayChanges = 3
    /// A window of rates lasts this many short rests.
    static let windowRests: UInt64 = 4
    /// Read passes one wake-up of a kernel backend's source runs at most (what came while a batch was processed is
    /// read in the same wake-up); a rest's end runs one.
    static let passesPerWakeUp = 4

    /// A rest's length: `delay` or `lingerDelay`.
    enum Rest {
        case short, long
    }

    private let queue: DispatchQueue
    private let shortNanoseconds: UInt64
    private let longNanoseconds: UInt64
    private let hold: () -> Void
    private let release: () -> Void
    /// Monotonic nanoseconds, what rates are judged by (tests give their own: rates without sleeping).
    private let now: @Sendable () -> UInt64
    /// The backend's read pass, run at the end of a rest (set once the backend starts).
    var read: (() -> Void)?
    private var suspensions = 0
    /// The rest under way (read by tests).
    private(set) var resting: Rest?
    /// The rests' timer (made at the first rest).
    private var timer: DispatchSourceTimer?
    /// The interval it repeats at, nanoseconds (nil: it is not set): what `setTimer` last gave it (read by tests).
    private(set) var timerInterval: UInt64?
    /// When the last batch ended (uptime nanoseconds; 0: none yet).
    private var lastBatchEnd: UInt64 = 0
    /// The changes and wake-ups counted since `windowStart`, over a few short rests' time: a steady stream read a
    /// few changes a wake-up (each wake-up under `restChanges / 2`) is fast all the same when they add up, and
    /// wake-ups a few milliseconds apart are worth a long rest.
    private var windowStart: UInt64 = 0
    private var windowChanges = 0
    private var windowWakeUps = 0
    /// What the last window closed said: the rest the stream is worth (nil: none).
    private var windowRest: Rest?

    /// `delay`: a short rest; `lingerDelay`: a long one (both whole milliseconds or microseconds).
    init(
        queue: DispatchQueue, delay: DispatchTimeInterval, lingerDelay: DispatchTimeInterval = .milliseconds(40),
        now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        hold: @escaping () -> Void, release: @escaping () -> Void
    ) {
        self.queue = queue
        self.now = now
        shortNanoseconds = Self.nanoseconds(delay, otherwise: 2_000_000)
        longNanoseconds = max(shortNanoseconds, Self.nanoseconds(lingerDelay, otherwise: 40_000_000))
        self.hold = hold
        self.release = release
    }

    private static func nanoseconds(_ interval: DispatchTimeInterval, otherwise: UInt64) -> UInt64 {
        switch interval {
        case .milliseconds(let ms): UInt64(max(0, ms)) * 1_000_000
        case .microseconds(let us): UInt64(max(0, us)) * 1_000
        default: otherwise
        }
    }

    var isSuspended: Bool { suspensions > 0 }

    /// Whether reading is held only by a rest (the rest's end may read).
    var isOnlyResting: Bool { resting != nil && suspensions == 1 }

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
            pace = max(pace, done.pace)
            if !done.readAny { break }
        }
        batchEnded(changes: changes, pace: pace, mayRest: mayRest)
    }

    /// A batch of `changes` ended (`pace`: what the engine asked); rests (short or long, see the type; no long rest
    /// when the engine asks `restBriefly`) if the stream is worth it and `mayRest`, otherwise ends a rest under way
    /// (reading is armed again).
    func batchEnded(changes: Int, pace: BackendPace, mayRest: Bool) {
        assertOnQueue(queue)
        let now = self.now()
        let since = lastBatchEnd == 0 ? UInt64.max : now &- lastBatchEnd
        lastBatchEnd = now
        let window = noteInWindow(changes, wokeUp: resting == nil, now: now)
        let next: Rest?
        if let resting {
            // What the rest just ended gathered, over its time (since the batch that began it; at least its
            // length): fewer than `stayChanges` no rest; at the fast rate a short one; otherwise the same again.
            let length = max(since, resting == .short ? shortNanoseconds : longNanoseconds)
            next =
                changes < Self.stayChanges
                ? nil
                : Self.atLeast(changes, per: shortNanoseconds, asMany: Self.restChanges, over: length)
                    ? .short : resting
        } else if changes >= Self.restChanges / 2,
            Self.atLeast(changes, per: shortNanoseconds, asMany: Self.restChanges, over: since)
        {
            next = .short
        } else {
            next = window
        }
        if let next, pace == .rest || (pace == .restBriefly && next == .short), mayRest {
            rest(next)
        } else if resting != nil {
            resting = nil
            resume()
        }
    }

    /// Whether `count` things in `elapsed` nanoseconds come at `asMany` per `per` nanoseconds or faster, without
    /// dividing (a product past UInt64 on the elapsed side is a long pause: no).
    private static func atLeast(_ count: Int, per: UInt64, asMany: Int, over elapsed: UInt64) -> Bool {
        let got = UInt64(max(0, count)).multipliedReportingOverflow(by: per)
        let wanted = UInt64(asMany).multipliedReportingOverflow(by: elapsed)
        return !wanted.overflow && (got.overflow || got.partialValue >= wanted.partialValue)
    }

    /// Counts `changes` and, for a wake-up of the armed reader (`wokeUp`), the wake-up in the window; when it has
    /// lasted `windowRests` short rests, decides for the next window the rest the stream is worth: short if a short
    /// rest would gather `restChanges` or wake-ups came at least twice per short rest, long if they came at least
    /// twice per long rest, two at least (a rest then replaces two wake-ups or more by one timer, however few
    /// changes each read). Returns that decision.
    private func noteInWindow(_ changes: Int, wokeUp: Bool, now: UInt64) -> Rest? {
        // The first batch opens the first window: n wake-ups after it, over the time since, are the rate.
        if windowStart == 0 {
            windowStart = now
            return windowRest
        }
        windowChanges += max(0, changes)
        if wokeUp && changes > 0 { windowWakeUps += 1 }
        let elapsed = now &- windowStart
        if elapsed >= shortNanoseconds * Self.windowRests {
            if Self.atLeast(windowChanges, per: shortNanoseconds, asMany: Self.restChanges, over: elapsed)
                || Self.atLeast(windowWakeUps, per: shortNanoseconds, asMany: 2, over: elapsed)
            {
                windowRest = .short
            } else if windowWakeUps >= 2, Self.atLeast(windowWakeUps, per: longNanoseconds, asMany: 2, over: elapsed) {
                windowRest = .long
            } else {
                windowRest = nil
            }
            (windowStart, windowChanges, windowWakeUps) = (now, 0, 0)
        }
        return windowRest
    }

    /// Holds reading for the rest's time, then reads (`read`) without arming; what that batch finds decides the
    /// next rest. The rests' timer repeats while rests of one length follow each other: a rest's end then costs no
    /// programming of a timer (an `asyncAfter` a rest woke libdispatch's manager thread once more, to set it).
    private func rest(_ length: Rest) {
        if resting == nil { suspend() }
        resting = length
        setTimer(length == .short ? shortNanoseconds : longNanoseconds)
    }

    /// The timer fired: the rest's own read (which rests again or arms), or, when something else holds reading
    /// too (a trim), the rest ends. The timer stops once no rest follows.
    private func restEnded() {
        if resting != nil {
            if isOnlyResting, let read {
                read() // ends with `batchEnded`: rests again or arms
            } else {
                resting = nil
                resume()
            }
        }
        if resting == nil { setTimer(nil) }
    }

    /// Sets the rests' timer to repeat every `interval` nanoseconds from now, or never (nil); unchanged when it
    /// already does.
    private func setTimer(_ interval: UInt64?) {
        guard interval != timerInterval else { return }
        timerInterval = interval
        guard let interval else {
            timer?.schedule(deadline: .distantFuture)
            return
        }
        if timer == nil {
            let made = DispatchSource.makeTimerSource(queue: queue)
            made.setEventHandler { @Sendable [weak self] in self?.restEnded() }
            made.resume()
            timer = made
        }
        let every = DispatchTimeInterval.nanoseconds(Int(interval))
        timer?.schedule(deadline: .now() + every, repeating: every)
    }

    /// Forgets every suspension and a rest under way (the backend stopped). Not checked: a backend's `deinit`,
    /// on any thread, calls it too, when nothing else can reach either.
    func reset() {
        timer?.cancel()
        (timer, timerInterval) = (nil, nil)
        suspensions = 0
        resting = nil
        lastBatchEnd = 0
        (windowStart, windowChanges, windowWakeUps, windowRest) = (0, 0, 0, nil)
    }
}
