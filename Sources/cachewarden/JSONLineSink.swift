import CacheWarden
import Foundation
import Glibc
import Synchronization

/// Writes event lines to a file descriptor (stdout) from a writer thread of its own, so a slow or stuck reader
/// never stalls the watcher: lines wait in a bounded buffer; past the bound they are dropped and counted, and a
/// `{"event":"dropped","count":N}` line goes out as soon as there is room again. All pending lines go out in one
/// `write(2)`, so a reader sees each batch promptly. On `EPIPE` (the reader is gone) the sink logs once on
/// stderr and discards further lines (or exits with `exitOnEPIPE`), while the watcher keeps enforcing quotas.
final class JSONLineSink: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var dropped = 0
        var closed = false
        var writing = false
    }

    private let fd: Int32
    private let limit: Int
    private let exitOnEPIPE: Bool
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    init(fd: Int32 = 1, bufferLimit: Int = 8 << 20, exitOnEPIPE: Bool = false) {
        self.fd = fd
        self.limit = bufferLimit
        self.exitOnEPIPE = exitOnEPIPE
        let thread = Thread { [self] in self.writerLoop() }
        thread.name = "cachewarden.stdout"
        thread.start()
    }

    /// Queues one event's line.
    func send(_ event: WardenEvent) {
        let line = event.jsonLineBytes()
        let queued = state.withLock { s -> Bool in
            if s.closed { return false }
            if s.pending.count + line.count > limit {
                s.dropped += 1
                return false
            }
            if s.dropped > 0 {
                s.pending.append(contentsOf: WardenEvent(.dropped(count: s.dropped)).jsonLineBytes())
                s.dropped = 0
            }
            s.pending.append(contentsOf: line)
            return true
        }
        if queued { wake.signal() }
    }

    /// Waits (up to `timeout` seconds) until every queued line is written.
    func flush(timeout: Double = 3) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let idle = state.withLock { s in s.closed || (s.pending.isEmpty && !s.writing) }
            if idle { return }
            usleep(1000)
        }
    }

    private func writerLoop() {
        while true {
            wake.wait()
            let chunk = state.withLock { s -> [UInt8] in
                let c = s.pending
                s.pending.removeAll(keepingCapacity: true)
                s.writing = !c.isEmpty
                return c
            }
            if chunk.isEmpty { continue }
            let ok = chunk.withUnsafeBytes { writeAll($0) }
            state.withLock { s in
                s.writing = false
                if !ok { s.closed = true; s.pending.removeAll() }
            }
            if !ok {
                if exitOnEPIPE { exit(0) }
                FileHandle.standardError.write(Data("cachewarden: stdout is closed (EPIPE); events are discarded from now on, quotas are still enforced\n".utf8))
                return
            }
        }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return false
            }
            offset += n
        }
        return true
    }
}
