import Dispatch
import Glibc
import Synchronization

/// Writes every event as one JSON line (the exact line `cachewarden run` prints) to a file descriptor, from a
/// writer thread of its own, so a slow or stuck reader never stalls the watcher: lines wait in a bounded buffer;
/// past the bound they are dropped and counted, and a `{"event":"dropped","count":N}` line goes out as soon as
/// there is room again. All pending lines go out in one `write(2)`, so a reader sees each batch promptly. When
/// the reader is gone (`EPIPE`), lines are discarded from then on and `onClosed` runs once.
public final class JSONLinesSink: EventSink {
    /// What the sink and its writer thread share. The thread holds this, not the sink: when the sink goes, the
    /// thread is told to end.
    private final class Shared: Sendable {
        struct State {
            var pending: [UInt8] = []
            var dropped = 0
            var closed = false
            var writing = false
            var ended = false
        }
        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
    }

    private let fd: Int32
    private let limit: Int
    private let shared = Shared()

    /// A sink writing to `fd` (default: stdout), holding at most `bufferLimit` bytes of lines for a slow reader.
    public init(fd: Int32 = 1, bufferLimit: Int = 8 << 20, onClosed: (@Sendable () -> Void)? = nil) {
        self.fd = fd
        self.limit = bufferLimit
        let shared = self.shared
        let thread = Thread { Self.writerLoop(fd: fd, shared: shared, onClosed: onClosed) }
        thread.name = "cachewarden.lines"
        thread.start()
    }

    deinit {
        shared.state.withLock { $0.ended = true }
        shared.wake.signal()
    }

    /// Queues the batch's lines (encoded before the lock is taken) and wakes the writer once.
    public func receive(_ events: [WardenEvent]) {
        let lines = events.map { $0.jsonLineBytes() }
        let limit = self.limit
        let queued = shared.state.withLock { s -> Bool in
            var any = false
            for line in lines where !s.closed {
                if s.pending.count + line.count > limit {
                    s.dropped += 1
                    continue
                }
                if s.dropped > 0 {
                    s.pending.append(contentsOf: WardenEvent(.dropped(count: s.dropped)).jsonLineBytes())
                    s.dropped = 0
                }
                s.pending.append(contentsOf: line)
                any = true
            }
            return any
        }
        if queued { shared.wake.signal() }
    }

    /// Queues one event's line.
    public func send(_ event: WardenEvent) { receive([event]) }

    /// Waits (up to 3 seconds) until every queued line is written.
    public func finish() { flush(timeout: 3) }

    /// Waits (up to `timeout` seconds) until every queued line is written.
    public func flush(timeout: Double) {
        let deadline = DispatchTime.now() + timeout
        while DispatchTime.now() < deadline {
            let idle = shared.state.withLock { s in s.closed || (s.pending.isEmpty && !s.writing) }
            if idle { return }
            usleep(1000)
        }
    }

    private static func writerLoop(fd: Int32, shared: Shared, onClosed: (@Sendable () -> Void)?) {
        while true {
            shared.wake.wait()
            let (chunk, ended) = shared.state.withLock { s -> ([UInt8], Bool) in
                let c = s.pending
                s.pending.removeAll(keepingCapacity: true)
                s.writing = !c.isEmpty
                return (c, s.ended)
            }
            if !chunk.isEmpty {
                let ok = chunk.withUnsafeBytes { (try? Syscall.writeAll(fd, $0)) != nil }
                shared.state.withLock { s in
                    s.writing = false
                    if !ok { s.closed = true; s.pending.removeAll() }
                }
                if !ok {
                    onClosed?()
                    return
                }
            }
            if ended { return }
        }
    }
}

import SystemPackage
