import CacheWardenFilesystem
import SystemPackage

/// Writes every event as one JSON line (the exact line `cachewarden run` prints) to a file descriptor: at once,
/// on the caller's thread, when the destination has room (a pipe or a socket written without blocking:
/// `DirectWrite`), otherwise from a writer thread of its own, so a slow or stuck reader never stalls the watcher:
/// lines that do not fit wait in a bounded buffer;
/// past the bound they are dropped and counted, and a `{"event":"dropped","count":N}` line goes out as soon as
/// there is room again. All pending lines go out in one `write(2)`, so a reader sees each batch promptly. When
/// the reader is gone (`EPIPE`), lines are discarded from then on and `onClosed` runs once.
public final class JSONLinesSink: EventSink {
    private let writer: BoundedWriter

    /// A sink writing to `fd` (default: stdout), holding at most `bufferLimit` bytes of lines for a slow reader.
    /// `fd` is borrowed: the caller keeps it open as long as the sink writes.
    public init(
        fd: FileDescriptor = .standardOutput, bufferLimit: Int = 8 << 20, onClosed: (@Sendable () -> Void)? = nil
    ) {
        let inline: (@Sendable (UnsafeRawBufferPointer) -> Int)? =
            if let direct = DirectWrite(fd) { { direct.write($0) } } else { nil }
        writer = BoundedWriter(
            name: "cachewarden.lines", limit: bufferLimit,
            droppedNote: { WardenEvent(.dropped(count: $0)).jsonLineBytes() },
            deliver: { lines in
                let batch = lines.joinedBytes
                return batch.withUnsafeBytes { (try? Syscall.writeAll(fd, $0)) != nil }
            },
            inline: inline,
            onClosed: onClosed)
    }

    /// Queues the batch's lines (encoded before the lock is taken) and wakes the writer once.
    public func receive(_ events: [WardenEvent]) {
        writer.enqueue(events.map { $0.jsonLineBytes() })
    }

    /// Queues one event's line.
    public func send(_ event: WardenEvent) { receive([event]) }

    /// Waits (up to 3 seconds) until every queued line is written.
    public func finish() { flush(timeout: 3) }

    /// Waits (up to `timeout` seconds) until every queued line is written.
    public func flush(timeout: Double) { writer.flush(timeout: timeout) }
}
