import CacheWardenFilesystem

/// The bounded writer behind the JSON-lines and journal sinks: chunks of bytes (a line, a record) wait in a queue
/// of at most `limit` bytes and go out from a thread of its own, so a slow or stuck reader never stalls the
/// watcher. Past the bound a chunk is dropped and counted, and a note of the count (`droppedNote`) is queued
/// before the next chunk there is room for. When the destination is gone for good (`deliver` returns false),
/// everything is discarded from then on and `onClosed` runs once.
///
/// With `inline` (a write that never blocks), a batch that finds nothing queued and nothing on its way is written
/// at once on the caller's thread, and only what does not fit (the destination is full) is queued for the thread:
/// a reader that keeps up costs no thread switch per batch, and a stuck one still never stalls the caller.
///
/// The thread holds the queue, not the writer: when the writer goes, the thread delivers what is left, runs
/// `onEnd` and ends. Waiting (the thread for work, `flush` for an empty queue) is on a condition, not a poll.
package final class BoundedWriter: Sendable {
    package struct State: Sendable {
        var pending: [[UInt8]] = []
        var bytes = 0
        var dropped = 0
        /// The thread holds chunks it took from `pending` and is delivering them.
        var delivering = false
        /// `deliver` said the destination is gone: nothing is queued or delivered again.
        var closed = false
        /// The writer is gone: the thread delivers what is left and ends.
        var ended = false

        /// Nothing waits and nothing is on its way (or nothing ever will be).
        var idle: Bool { closed || (pending.isEmpty && !delivering) }
    }

    private let queue = ConditionLock(State())
    private let limit: Int
    private let droppedNote: @Sendable (Int) -> [UInt8]
    private let inline: (@Sendable (UnsafeRawBufferPointer) -> Int)?

    /// A writer holding at most `limit` bytes. `deliver` runs on the thread (named `name`) with every chunk queued
    /// since its last turn, in order, and returns false when the destination is gone for good. `inline`, if given,
    /// writes what it can of some bytes without blocking and returns how many it wrote (0 when the destination is
    /// full, or on any error: the thread's `deliver` then meets it).
    package init(
        name: String, limit: Int, droppedNote: @escaping @Sendable (Int) -> [UInt8],
        deliver: @escaping @Sendable ([[UInt8]]) -> Bool,
        inline: (@Sendable (UnsafeRawBufferPointer) -> Int)? = nil,
        onClosed: (@Sendable () -> Void)? = nil, onEnd: @escaping @Sendable () -> Void = {}
    ) {
        self.limit = limit
        self.droppedNote = droppedNote
        self.inline = inline
        let queue = self.queue
        let thread = Thread { Self.run(queue, deliver: deliver, onClosed: onClosed, onEnd: onEnd) }
        thread.name = name
        thread.start()
    }

    deinit {
        queue.withLock(wakingWaiters: true) { $0.ended = true }
    }

    /// Writes the chunks (built before the lock is taken) inline where it can; queues the rest and wakes the thread.
    package func enqueue(_ chunks: [[UInt8]]) {
        let limit = self.limit, droppedNote = self.droppedNote, inline = self.inline
        queue.update { s in
            let before = s.pending.count
            var chunks = chunks[...]
            // Nothing ahead of them: what fits goes out now, in order. The lock is held while writing, so the
            // thread cannot start on later chunks meanwhile.
            if let inline, !chunks.isEmpty, s.pending.isEmpty, !s.delivering, !s.closed, s.dropped == 0 {
                let batch = chunks.joinedBytes
                var written = batch.withUnsafeBytes { inline($0) }
                while let first = chunks.first, written >= first.count {
                    written -= first.count
                    chunks.removeFirst()
                }
                // A chunk written in part: its rest is queued whatever the bound (a line is never cut).
                if written > 0, let first = chunks.popFirst() {
                    let rest = Array(first[written...])
                    s.pending.append(rest)
                    s.bytes += rest.count
                }
            }
            for chunk in chunks where !s.closed {
                if s.bytes + chunk.count > limit {
                    s.dropped += 1
                    continue
                }
                if s.dropped > 0 {
                    let note = droppedNote(s.dropped)
                    s.pending.append(note)
                    s.bytes += note.count
                    s.dropped = 0
                }
                s.pending.append(chunk)
                s.bytes += chunk.count
            }
            return s.pending.count > before // the thread has work: wake it
        }
    }

    /// Waits (up to `timeout` seconds) until every queued chunk is delivered, or the destination is gone; asleep
    /// until the thread says so. Returns whether it is.
    @discardableResult
    package func flush(timeout: Double) -> Bool {
        queue.wait(until: \.idle, timeout: timeout) { _, idle in idle }
    }

    /// The queue now (tests).
    package var state: State { queue.withLock { $0 } }

    private static func run(
        _ queue: ConditionLock<State>, deliver: @Sendable ([[UInt8]]) -> Bool,
        onClosed: (@Sendable () -> Void)?, onEnd: @Sendable () -> Void
    ) {
        while true {
            let (chunks, ended) = queue.wait(until: { !$0.pending.isEmpty || $0.ended }) { s, _ in
                let chunks = s.pending
                s.pending.removeAll(keepingCapacity: true)
                s.bytes = 0
                s.delivering = !chunks.isEmpty
                return (chunks, s.ended)
            }
            if !chunks.isEmpty {
                let open = deliver(chunks)
                queue.withLock(wakingWaiters: true) { s in
                    s.delivering = false
                    if !open { s.closed = true; s.pending.removeAll(); s.bytes = 0 }
                }
                if !open {
                    onClosed?()
                    return
                }
            }
            if ended { onEnd(); return }
        }
    }
}

extension Collection where Element == [UInt8] {
    /// The chunks as one buffer, for one `write`: the only chunk itself (no copy), else all of them appended into
    /// one buffer sized once. (`Array(joined())` copies through the generic flattened sequence a byte at a time: a
    /// watcher printing a line per file spent 3.2 % of its samples there.)
    var joinedBytes: [UInt8] {
        if count == 1 { return self[startIndex] }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(reduce(0) { $0 + $1.count })
        for chunk in self { bytes.append(contentsOf: chunk) }
        return bytes
    }
}
