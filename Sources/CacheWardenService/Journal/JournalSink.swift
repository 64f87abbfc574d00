import CacheWarden
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import SystemPackage

/// Sends every event to journald as a record with fields (`JournalRecord`), over its native protocol: one
/// datagram per record to `/run/systemd/journal/socket`, no libsystemd. A record too large for one datagram
/// (`EMSGSIZE`) goes as a sealed memfd passed with `SCM_RIGHTS`, as `sd_journal_send` does.
///
/// Like `JSONLinesSink`, it sends from a thread of its own, so a journald that is slow (its queue full: `send`
/// blocks) never stalls the watcher: records wait in a bounded buffer, past it they are dropped and counted, and
/// a `dropped` record follows when there is room. A record journald refuses (it is gone, restarting) is lost;
/// `onError` hears the first failure of each run of them.
public final class JournalSink: EventSink {
    /// journald's socket for native records.
    public static let defaultSocket = "/run/systemd/journal/socket"

    /// Where to send: `$CACHEWARDEN_JOURNAL_SOCKET` when set (tests, containers with the journal's socket
    /// elsewhere), else `defaultSocket`.
    public static func socketPath(environment given: [String: String]? = nil) -> String {
        let environment = given ?? ProcessEnvironment.variables
        return environment["CACHEWARDEN_JOURNAL_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultSocket
    }

    /// Whether `path` is a socket now (journald runs, or a listener stands in for it).
    public static func isListening(_ path: String) -> Bool {
        guard let st = try? Syscall.lstat(path: path) else { return false }
        return st.st_mode & S_IFMT == S_IFSOCK
    }

    private final class Shared: Sendable {
        struct State {
            var pending: [[UInt8]] = []
            var bytes = 0
            var dropped = 0
            var sending = false
            var ended = false
        }
        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()
    private let limit: Int

    /// A sink sending to `socket`, holding at most `bufferLimit` bytes of records while journald is slow.
    /// `sendBuffer` is the socket's `SO_SNDBUF` (the kernel caps it at `net.core.wmem_max`), which bounds one
    /// datagram; larger records go through a memfd.
    public init(socket: String, bufferLimit: Int = 8 << 20, sendBuffer: Int = 8 << 20,
                onError: @escaping @Sendable (String) -> Void = { _ in }) throws(Errno) {
        limit = bufferLimit
        let sender = try JournalSender(path: socket, sendBuffer: sendBuffer)
        let shared = self.shared
        let thread = Thread { Self.senderLoop(sender, shared: shared, onError: onError) }
        thread.name = "cachewarden.journal"
        thread.start()
    }

    deinit {
        shared.state.withLock { $0.ended = true }
        shared.wake.signal()
    }

    /// Encodes the batch's records (before the lock is taken) and wakes the sender once.
    public func receive(_ events: [WardenEvent]) {
        let records = events.map { JournalRecord($0).bytes }
        let limit = self.limit
        let queued = shared.state.withLock { s -> Bool in
            var any = false
            for r in records {
                if s.bytes + r.count > limit { s.dropped += 1; continue }
                if s.dropped > 0 {
                    let note = JournalRecord(WardenEvent(.dropped(count: s.dropped))).bytes
                    s.pending.append(note)
                    s.bytes += note.count
                    s.dropped = 0
                }
                s.pending.append(r)
                s.bytes += r.count
                any = true
            }
            return any
        }
        if queued { shared.wake.signal() }
    }

    /// Waits (up to 3 seconds) until every queued record is sent.
    public func finish() { flush(timeout: 3) }

    /// Waits (up to `timeout` seconds) until every queued record is sent.
    public func flush(timeout: Double) {
        let deadline = DispatchTime.now() + timeout
        while DispatchTime.now() < deadline {
            if shared.state.withLock({ $0.pending.isEmpty && !$0.sending }) { return }
            usleep(1000)
        }
    }

    private static func senderLoop(_ sender: JournalSender, shared: Shared, onError: @Sendable (String) -> Void) {
        var failing = false
        while true {
            shared.wake.wait()
            let (records, ended) = shared.state.withLock { s -> ([[UInt8]], Bool) in
                let r = s.pending
                s.pending.removeAll(keepingCapacity: true)
                s.bytes = 0
                s.sending = !r.isEmpty
                return (r, s.ended)
            }
            for r in records {
                do throws(Errno) {
                    try sender.send(r)
                    failing = false
                } catch {
                    if !failing { onError("cannot send to the journal (\(sender.path)): \(error); records are lost until it answers") }
                    failing = true
                }
            }
            shared.state.withLock { $0.sending = false }
            if ended { sender.close(); return }
        }
    }
}

/// The sending end: one unbound datagram socket, used by the sink's thread alone.
final class JournalSender: Sendable {
    let path: String
    private let fd: Int32

    init(path: String, sendBuffer: Int) throws(Errno) {
        self.path = path
        fd = try UnixSocket.make(Int32(SOCK_DGRAM.rawValue))
        var size = Int32(clamping: sendBuffer)
        _ = try? Syscall.retrying { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// Sends one record: a datagram, or a sealed memfd when the record is too large for one.
    func send(_ record: [UInt8]) throws(Errno) {
        do throws(Errno) {
            try UnixSocket.sendDatagram(record, on: fd, to: path)
        } catch where error == .messageTooLong || error == .noBufferSpace {
            let memfd = try Syscall.sealedMemoryFile("cachewarden-journal", record)
            defer { Syscall.close(memfd) }
            try UnixSocket.sendDescriptor(memfd, on: fd, to: path)
        }
    }

    func close() { Syscall.close(fd) }
}
