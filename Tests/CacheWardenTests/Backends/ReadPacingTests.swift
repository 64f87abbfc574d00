import Dispatch
import Synchronization
import Testing
@testable import CacheWarden

/// When reading rests between batches, and how long: a short rest while changes come fast, a long one while a
/// steady stream wakes the reader every few milliseconds, none for a stream slower than that (read as it comes,
/// with no timer), and only short ones or none as the engine asks near a quota.
@Suite struct ReadPacingTests {
    final class Probe: Sendable {
        let holds = Atomic<Int>(0)
        let releases = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        /// The pacing's clock (nanoseconds): the tests move it, so rates are exact and nothing sleeps.
        let nanoseconds = Atomic<UInt64>(1_000_000_000)

        func advance(microseconds: UInt64) { nanoseconds.add(microseconds * 1000, ordering: .relaxed) }
    }

    private func pacing(_ queue: DispatchQueue, _ probe: Probe) -> ReadPacing {
        ReadPacing(
            queue: queue, delay: .milliseconds(2), now: { probe.nanoseconds.load(ordering: .relaxed) },
            hold: { probe.holds.add(1, ordering: .relaxed) }, release: { probe.releases.add(1, ordering: .relaxed) })
    }

    @Test func aSlowStreamNeverRests() {
        // A file's changes (5) every 25 ms: one wake-up a window (8 ms), and a long rest needs two;
        // then its creation and its close read in two wake-ups a moment apart: not a fast stream either.
        #expect(holds(after: Array(repeating: (5, 25_000), count: 8) + [(2, 0), (3, 0)]) == 0)
    }

    /// 400 files a second, each read in two wake-ups (its creation, then its write and close): no single wake-up
    /// says anything, but once a window shows wake-ups every 1.25 ms — under the short rest's rate (two per 2 ms),
    /// over the long one's (two per 40 ms) — reading takes long rests, and goes on while each gathers a few files.
    @Test func aSteadyStreamOfAFileEveryFewMillisecondsTakesLongRests() {
        // Each rest's end reads what 40 ms gathered at that rate (16 files, 48 changes), then the writer stops.
        let run = restsUnderASteadyStream(gathered: [48, 48, 0])
        #expect(run.wakeUps == 8, "no rest before the window's rate is known (8.75 ms)")
        #expect(run.rests.map(\.length) == [.long, .long, .long], "48 changes in 40 ms is not the fast rate")
        #expect(run.rests.map(\.timer) == [40_000_000, 40_000_000, 40_000_000], "one timer, repeating every 40 ms")
        #expect(run.holds == 1 && run.releases == 1, "armed once a rest gathered nothing")
    }

    /// A long rest that gathered changes at the fast rate (a writer sped up) is followed by a short one.
    @Test func aLongRestThatGatheredAFastStreamIsFollowedByAShortOne() {
        let run = restsUnderASteadyStream(gathered: [500, 0])
        #expect(run.rests.map(\.length) == [.long, .short])
        #expect(run.rests.map(\.timer) == [40_000_000, 2_000_000], "the timer set again at 2 ms")
    }

    /// Once a quota is within reach the engine asks for no long rest: the same steady stream is read as it comes,
    /// a long rest under way is followed by none, and a fast stream still rests 2 ms.
    @Test func restingBrieflyTakesNoLongRest() {
        #expect(holds(after: Array(repeating: (2, 1250), count: 12), pace: .restBriefly) == 0)
        // A fast stream's short rest is still taken.
        #expect(holds(after: [(10, 0), (10, 0)], pace: .restBriefly) == 1)
        let under = restsUnderASteadyStream(gathered: [48], restPaces: [.restBriefly])
        #expect(under.rests.map(\.length) == [.long] && under.releases == 1)
    }

    /// A wake-up's reading takes the most watchful of its passes' paces: one pass asking `restBriefly` is enough to
    /// keep a steady stream from a long rest.
    @Test func aWakeUpTakesTheMostWatchfulPaceOfItsPasses() {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        queue.sync {
            let p = pacing(queue, probe)
            for _ in 0..<12 {
                // Three passes: a file's creation, its close with the engine's answer, then nothing left.
                var pass = 0
                p.drain(passes: ReadPacing.passesPerWakeUp, mayRest: true) { _ in
                    pass += 1
                    return pass == 1 ? (1, true, .rest) : pass == 2 ? (1, true, .restBriefly) : (0, false, .rest)
                }
                #expect(pass == 3)
                probe.advance(microseconds: 1250)
            }
            #expect(!p.isSuspended)
        }
    }

    /// Two wake-ups 9 ms apart after a quiet spell are no steady stream: a 40 ms rest would replace one wake-up.
    @Test func oneWakeUpInAWindowTakesNoLongRest() {
        #expect(holds(after: [(2, 9000), (2, 0)]) == 0)
    }

    /// The holds of reading after wake-ups reading `changes` each, `then` microseconds apart, the engine asking
    /// `pace` after each (a rest that started is forgotten at the end).
    private func holds(after wakeUps: [(changes: Int, then: UInt64)], pace: BackendPace = .rest) -> Int {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        queue.sync {
            let p = pacing(queue, probe)
            for w in wakeUps {
                p.batchEnded(changes: w.changes, pace: pace, mayRest: true)
                probe.advance(microseconds: w.then)
            }
            p.reset()
        }
        return probe.holds.load(ordering: .relaxed)
    }

    /// Two changes every 1.25 ms (`pace` asked after each) until a rest is taken, then each rest's end reads the
    /// next of `gathered` (its time passed: 40 ms for a long rest, 2 for a short one; the engine asking the next of
    /// `restPaces`) until the last. Returns the wake-ups before the first rest, each rest's length and its timer's
    /// interval in order, and the holds and releases of reading; checks that the timer is stopped at the end.
    private func restsUnderASteadyStream(
        pace: BackendPace = .rest, gathered: [Int], restPaces: [BackendPace] = []
    ) -> (wakeUps: Int, rests: [(length: ReadPacing.Rest?, timer: UInt64?)], holds: Int, releases: Int) {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        let p = queue.sync { pacing(queue, probe) }
        let rests = Mutex<[(length: ReadPacing.Rest?, timer: UInt64?)]>([])
        let done = DispatchSemaphore(value: 0)
        var wakeUps = 0
        queue.sync {
            p.read = {
                let n = rests.withLock {
                    $0.append((p.resting, p.timerInterval))
                    return $0.count
                }
                probe.advance(microseconds: p.resting == .long ? 40_000 : 2_000)
                let restPace = n <= restPaces.count ? restPaces[n - 1] : pace
                p.batchEnded(changes: n <= gathered.count ? gathered[n - 1] : 0, pace: restPace, mayRest: true)
                if n >= gathered.count { done.signal() }
            }
            while !p.isSuspended && wakeUps < 100 {
                p.batchEnded(changes: 2, pace: pace, mayRest: true)
                probe.advance(microseconds: 1250)
                wakeUps += 1
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        queue.sync { #expect(!p.isSuspended && p.timerInterval == nil, "armed, and the rests' timer stopped") }
        return (
            wakeUps, rests.withLock { $0 }, probe.holds.load(ordering: .relaxed),
            probe.releases.load(ordering: .relaxed)
        )
    }

    @Test func aFastStreamRestsThenReadsWithoutArmingAndArmsOnceItSlows() {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        let done = DispatchSemaphore(value: 0)
        let p = queue.sync { pacing(queue, probe) }
        queue.sync {
            // The rest's end reads (and reports a batch): the first finds a batch's worth, the second little.
            p.read = {
                let n = probe.reads.add(1, ordering: .relaxed).newValue
                p.batchEnded(changes: n == 1 ? 40 : 1, pace: .rest, mayRest: true)
                if n == 2 { done.signal() }
            }
            p.batchEnded(changes: 10, pace: .rest, mayRest: true)
            p.batchEnded(changes: 10, pace: .rest, mayRest: true) // 10 changes in microseconds: rest
            #expect(p.isSuspended)
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        queue.sync { #expect(!p.isSuspended) }
        #expect(probe.holds.load(ordering: .relaxed) == 1, "one hold for both rests")
        #expect(probe.releases.load(ordering: .relaxed) == 1)
        #expect(probe.reads.load(ordering: .relaxed) == 2)
    }

    /// A steady stream read a file at a time (3 changes a wake-up, every half millisecond: 6,000 changes a second)
    /// rests once a window of four rests shows its rate, though no single wake-up reads enough to say so.
    @Test func aSteadyStreamReadAFileAtATimeRestsOnceItsRateIsKnown() {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        queue.sync {
            let p = pacing(queue, probe)
            // One window is four rests (8 ms): sixteen wake-ups, each too small to count as fast alone, then the
            // one that closes the window.
            for _ in 0..<16 {
                p.batchEnded(changes: 3, pace: .rest, mayRest: true)
                #expect(!p.isSuspended, "no rest before the window's rate is known")
                probe.advance(microseconds: 500)
            }
            p.batchEnded(changes: 3, pace: .rest, mayRest: true)
            #expect(p.isSuspended, "a rest once the window's rate is known")
        }
        #expect(probe.holds.load(ordering: .relaxed) == 1)
    }

    /// fanotify merges a file's records into one: at 3,000 files a second each wake-up reads one change, every
    /// third of a millisecond — too few changes for the rate rule (25 in a window of 8.3 ms, under 33), but three
    /// wake-ups per rest's time. It rests once the window shows that, and goes on resting while each rest gathers a
    /// few files.
    @Test func wakeUpsEveryThirdOfAMillisecondRestThoughEachReadsOneChange() {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        let p = queue.sync { pacing(queue, probe) }
        let rests = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        queue.sync {
            // The rest's end reads what two milliseconds gathered: six files, then six, then nothing (the writer
            // stopped): reading is armed again.
            p.read = {
                let n = rests.add(1, ordering: .relaxed).newValue
                probe.advance(microseconds: 2000)
                p.batchEnded(changes: n < 3 ? 6 : 0, pace: .rest, mayRest: true)
                if n == 3 { done.signal() }
            }
            for _ in 0..<25 {
                p.batchEnded(changes: 1, pace: .rest, mayRest: true)
                #expect(!p.isSuspended, "no rest before the window's rate is known")
                probe.advance(microseconds: 333)
            }
            p.batchEnded(changes: 1, pace: .rest, mayRest: true)
            #expect(p.isSuspended, "a rest once the window shows three wake-ups per rest's time")
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        queue.sync { #expect(!p.isSuspended, "armed once a rest gathered nothing") }
        #expect(rests.load(ordering: .relaxed) == 3, "rested again after each rest that gathered six changes")
        #expect(probe.holds.load(ordering: .relaxed) == 1 && probe.releases.load(ordering: .relaxed) == 1)
    }

    /// A rest that gathered only a file's creation and close (two changes) is not worth another: reading is armed.
    @Test func aRestThatGatheredOneFileArms() {
        let queue = DispatchQueue(label: "test.pacing")
        let probe = Probe()
        let p = queue.sync { pacing(queue, probe) }
        let done = DispatchSemaphore(value: 0)
        queue.sync {
            p.read = {
                p.batchEnded(changes: 2, pace: .rest, mayRest: true)
                done.signal()
            }
            p.batchEnded(changes: 10, pace: .rest, mayRest: true)
            p.batchEnded(changes: 10, pace: .rest, mayRest: true) // 10 changes in no time: rest
            #expect(p.isSuspended)
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        queue.sync { #expect(!p.isSuspended) }
        #expect(probe.releases.load(ordering: .relaxed) == 1)
    }

    @Test func nearAQuotaReadingNeverRests() {
        #expect(holds(after: Array(repeating: (100, 0), count: 5), pace: .keepReading) == 0)
    }
}
