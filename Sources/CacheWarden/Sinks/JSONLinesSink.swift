import Glibc

/// Writes every event as one JSON line (the exact line `cachewarden run` prints) to a file descriptor: at once,
/// on the caller's thread, when the destination has room (a pipe or a socket written without blocking, a regular
/// file), otherwise from a writer thread of its own, so a slow or stuck reader never stalls the watcher: lines
/// that do not fit wait in a bounded buffer;
/// past the bound they are dropped and counted, and a `{"event":"dropped","count":N}` line goes out as soon as
/// there is room again. All pending lines go out in one `write(2)`, so a reader sees each batch promptly. When
/// the reader is gone (`EPIPE`), lines are discarded from then on and `onClosed` runs once.
public final class JSONLinesSink: EventSink {
    private let writer: BoundedWriter

    /// A sink writing to `fd` (default: stdout), holding at most `bufferLimit` bytes of lines for a slow reader.
    public init(fd: Int32 = 1, bufferLimit: Int = 8 << 20, onClosed: (@Sendable () -> Void)? = nil) {
        let inline: (@Sendable (UnsafeRawBufferPointer) -> Int)? =
            if let direct = DirectWrite(fd) { { direct.write($0) } } else { nil }
        writer = BoundedWriter(
            name: "cachewarden.lines", limit: bufferLimit,
            droppedNote: { WardenEvent(.dropped(count: $0)).jsonLineBytes() },
            deliver: { lines in
                let batch = lines.count == 1 ? lines[0] : Array(lines.joined())
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

/// A write to a descriptor that never blocks, for `JSONLinesSink`'s inline writes; nil for a destination where
/// that cannot be had without changing the descriptor others share (a terminal, a device). A pipe or FIFO is
/// opened again through `/proc/self/fd` non-blocking (a description of its own: the shared one keeps its
/// flags), a socket is sent to with `MSG_DONTWAIT`, a regular file is written as it is (a file's write does
/// not wait for a reader).
final class DirectWrite: Sendable {
    private enum Way { case file, pipe, socket }
    private let fd: Int32
    private let way: Way
    /// The pipe's own non-blocking descriptor, closed with this value.
    private let owned: OwnedDescriptor?

    init?(_ fd: Int32) {
        guard let st = try? Syscall.fstat(fd) else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            (self.fd, way, owned) = (fd, .file, nil)
        case S_IFSOCK:
            (self.fd, way, owned) = (fd, .socket, nil)
        case S_IFIFO:
            // With no reader this fails (ENXIO): the thread then meets the closed pipe.
            let reopened = open("/proc/self/fd/\(fd)", O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            guard reopened >= 0 else { return nil }
            let owned = OwnedDescriptor(reopened)
            (self.fd, way, self.owned) = (owned.fd, .pipe, owned)
        default:
            return nil
        }
    }

    /// Writes what fits of `bytes` now; returns how many bytes were written (0 when full, or on any error).
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        while true {
            let n =
                way == .socket
                ? send(fd, base, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
                : Glibc.write(fd, base, bytes.count)
            if n >= 0 { return n }
            if errno != EINTR { return 0 }
        }
    }
}
