import Dispatch
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// The writer behind the JSON-lines and journal sinks: `flush` sleeps on a condition until the thread has
/// delivered everything, instead of polling the queue.
@Suite struct BoundedWriterTests {
    /// A destination that blocks until released, recording what it got.
    final class Gate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let delivered = Mutex<[[UInt8]]>([])

        func deliver(_ chunks: [[UInt8]]) -> Bool {
            entered.signal()
            release.wait()
            delivered.withLock { $0 += chunks }
            return true
        }
    }

    /// CPU time and voluntary context switches of the calling thread so far.
    static func threadUsage() -> (cpu: Double, switches: Int) {
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage) // RUSAGE_THREAD, which Swift's Glibc does not import
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return (cpu, usage.ru_nvcsw)
    }

    @Test func aBlockedFlushSleepsUntilItsTimeoutAndOneReturnsOnceTheWriterDrained() throws {
        let gate = Gate()
        let writer = BoundedWriter(
            name: "test.writer", limit: 1 << 20, droppedNote: { _ in [] },
            deliver: { gate.deliver($0) })
        writer.enqueue([Array("one\n".utf8)])
        #expect(gate.entered.wait(timeout: .now() + 10) == .success, "the writer never took the chunk")
        writer.enqueue([Array("two\n".utf8)])

        // The destination is stuck: flush times out, asleep meanwhile. A loop on usleep(1000) wakes ~300 times in
        // 0.3 s (as many voluntary switches, and its CPU time grows with each); a condition wakes once.
        let before = Self.threadUsage()
        let start = DispatchTime.now()
        #expect(!writer.flush(timeout: 0.3))
        let waited = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let after = Self.threadUsage()
        #expect(waited >= 0.29, "flush returned after \(waited) s, before its timeout, with the writer stuck")
        #expect(after.switches - before.switches <= 5, "flush woke \(after.switches - before.switches) times")
        #expect(after.cpu - before.cpu < 0.01, "a blocked flush used \(after.cpu - before.cpu) s of CPU")

        // Released, the writer drains both chunks, and flush returns as soon as it has, long before its timeout.
        DispatchQueue.global().async {
            gate.release.signal(); gate.release.signal()
        }
        let drained = DispatchTime.now()
        #expect(writer.flush(timeout: 20))
        #expect(Double(DispatchTime.now().uptimeNanoseconds - drained.uptimeNanoseconds) / 1e9 < 10)
        #expect(gate.delivered.withLock { $0 } == [Array("one\n".utf8), Array("two\n".utf8)])
        #expect(writer.state.pending.isEmpty && !writer.state.delivering)
    }

    @Test func pastTheBoundChunksAreDroppedCountedAndNotedBeforeTheNext() throws {
        let gate = Gate()
        let writer = BoundedWriter(
            name: "test.writer", limit: 10, droppedNote: { Array("dropped \($0)\n".utf8) },
            deliver: { gate.deliver($0) })
        writer.enqueue([Array("first\n".utf8)])
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        // Queued while the first is out: 6 bytes fit, the next two do not.
        writer.enqueue([Array("abcde\n".utf8), Array("fghij\n".utf8), Array("klmno\n".utf8)])
        #expect(writer.state.dropped == 2 && writer.state.bytes == 6)
        gate.release.signal()
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        writer.enqueue([Array("z\n".utf8)])
        gate.release.signal()
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        gate.release.signal()
        #expect(writer.flush(timeout: 20))
        let text = gate.delivered.withLock { $0 }.map { String(decoding: $0, as: UTF8.self) }
        #expect(text == ["first\n", "abcde\n", "dropped 2\n", "z\n"])
    }

    @Test func aClosedDestinationDiscardsEverythingAndFlushReturnsAtOnce() throws {
        let closed = DispatchSemaphore(value: 0)
        let writer = BoundedWriter(
            name: "test.writer", limit: 1 << 20, droppedNote: { _ in [] },
            deliver: { _ in false }, onClosed: { closed.signal() })
        writer.enqueue([Array("lost\n".utf8)])
        #expect(closed.wait(timeout: .now() + 10) == .success, "onClosed did not run")
        writer.enqueue([Array("after\n".utf8)])
        #expect(writer.state.closed && writer.state.pending.isEmpty && writer.state.dropped == 0)
        #expect(writer.flush(timeout: 0))
    }
    /// An inline write that takes `room` bytes in all, then nothing (a pipe that fills), recording what it took.
    final class Room: Sendable {
        let left: Mutex<Int>
        let taken = Mutex<[UInt8]>([])
        init(_ room: Int) { left = Mutex(room) }

        func write(_ bytes: UnsafeRawBufferPointer) -> Int {
            left.withLock { left in
                let n = min(left, bytes.count)
                left -= n
                taken.withLock { $0 += bytes.prefix(n) }
                return n
            }
        }
    }

    @Test func withRoomLinesAreWrittenInlineAndTheThreadIsNeverHandedAnything() throws {
        let room = Room(1 << 20)
        let delivered = Mutex<Int>(0)
        let writer = BoundedWriter(
            name: "test.writer", limit: 1 << 20, droppedNote: { _ in [] },
            deliver: { chunks in
                delivered.withLock { $0 += chunks.count }; return true
            },
            inline: { room.write($0) })
        writer.enqueue([Array("one\n".utf8), Array("two\n".utf8)])
        writer.enqueue([Array("three\n".utf8)])
        #expect(writer.flush(timeout: 10))
        #expect(String(decoding: room.taken.withLock { $0 }, as: UTF8.self) == "one\ntwo\nthree\n")
        #expect(delivered.withLock { $0 } == 0)
        #expect(writer.state.pending.isEmpty)
    }

    @Test func whatDoesNotFitGoesToTheThreadInOrderAndLaterLinesWaitBehindIt() throws {
        let gate = Gate()
        let room = Room(8)
        let writer = BoundedWriter(
            name: "test.writer", limit: 1 << 20, droppedNote: { _ in [] },
            deliver: { gate.deliver($0) }, inline: { room.write($0) })
        // The pipe takes "first\n" and two bytes of "second\n": the rest of that line is queued whole.
        writer.enqueue([Array("first\n".utf8), Array("second\n".utf8), Array("third\n".utf8)])
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        // The thread is delivering: a line now waits behind it even though the pipe has room again.
        room.left.withLock { $0 = 1 << 20 }
        writer.enqueue([Array("fourth\n".utf8)])
        gate.release.signal()
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        gate.release.signal()
        #expect(writer.flush(timeout: 20))
        let inline = String(decoding: room.taken.withLock { $0 }, as: UTF8.self)
        let threaded = gate.delivered.withLock { $0 }.map { String(decoding: $0, as: UTF8.self) }.joined()
        #expect(inline == "first\nse")
        #expect(threaded == "cond\nthird\nfourth\n")
    }

    /// The batch joined for one `write` is the chunks end to end, as the standard library's `joined()` gives them:
    /// none, one, empty ones, many of random lengths.
    @Test func aJoinedBatchIsTheChunksEndToEnd() {
        var rng = ModelBasedTotalsTests.Generator(state: 7)
        var cases: [[[UInt8]]] = [[], [[]], [[1, 2, 3]], [[], [4], []]]
        for _ in 0..<50 {
            cases.append((0..<rng.below(9)).map { _ in (0..<rng.below(300)).map { _ in UInt8(rng.below(256)) } })
        }
        for chunks in cases { #expect(chunks.joinedBytes == Array(chunks.joined()), "\(chunks.map(\.count))") }
        let slice = cases[3][1...]
        #expect(slice.joinedBytes == [4])
    }
}
