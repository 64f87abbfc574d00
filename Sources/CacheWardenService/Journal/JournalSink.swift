import CacheWarden
import CacheWardenFilesystem
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
package final class JournalSink: EventSink {
    /// journald's socket for native records.
    package static let defaultSocket = "/run/systemd/journal/socket"

    /// Where to send: `$CACHEWARDEN_JOURNAL_SOCKET` when set (tests, containers with the journal's socket
    /// elsewhere), else `defaultSocket`.
    package static func socketPath(environment given: [String: String]? = nil) -> String {
        let environment = given ?? ProcessEnvironment.variables
        return environment["CACHEWARDEN_JOURNAL_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultSocket
    }

    /// What is at a journal socket's path.
    package enum Listener: Equatable, Sendable {
        /// A socket that receives (journald, or a listener standing in for it).
        case listening
        /// Nothing, or not a socket: no journald here.
        case notASocket
        /// A socket file nothing receives at (`ECONNREFUSED`: a journald that stopped left it behind); every
        /// record sent there would be refused.
        case refused(Errno)
    }

    /// What is at `path` now. A socket file alone is not enough: a datagram socket's `connect` tells a stale one
    /// apart at once, without sending anything.
    package static func listener(at path: String) -> Listener {
        guard let st = try? Syscall.lstat(path: path), st.st_mode & S_IFMT == S_IFSOCK else { return .notASocket }
        do throws(Errno) {
            let socket = try UnixSocket.make(Int32(SOCK_DGRAM.rawValue))
            try socket.borrow { (fd) throws(Errno) in try UnixSocket.connect(fd, path) }
            return .listening
        } catch {
            return .refused(error)
        }
    }

    /// Whether something receives at `path` now (journald runs, or a listener stands in for it).
    package static func isListening(_ path: String) -> Bool { listener(at: path) == .listening }

    private let writer: BoundedWriter

    /// A sink sending to `socket`, holding at most `bufferLimit` bytes of records while journald is slow.
    /// `sendBuffer` is the socket's `SO_SNDBUF` (the kernel caps it at `net.core.wmem_max`), which bounds one
    /// datagram; larger records go through a memfd.
    package init(
        socket: String, bufferLimit: Int = 8 << 20, sendBuffer: Int = 8 << 20,
        onError: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(Errno) {
        let sender = try JournalSender(path: socket, sendBuffer: sendBuffer)
        writer = BoundedWriter(
            name: "cachewarden.journal", limit: bufferLimit,
            droppedNote: { JournalRecord(WardenEvent(.dropped(count: $0))).bytes },
            deliver: { records in
                for r in records { sender.send(r, onError: onError) }
                return true
            },
            onEnd: { sender.close() })
    }

    /// Encodes the batch's records (before the lock is taken) and wakes the sender once.
    package func receive(_ events: [WardenEvent]) {
        writer.enqueue(events.map { JournalRecord($0).bytes })
    }

    /// Waits (up to 3 seconds) until every queued record is sent.
    package func finish() { flush(timeout: 3) }

    /// Waits (up to `timeout` seconds) until every queued record is sent.
    package func flush(timeout: Double) { writer.flush(timeout: timeout) }
}

/// The sending end: one unbound datagram socket, used by the sink's thread alone.
final class JournalSender: Sendable {
    let path: String
    /// Dropped (closed) by `close()`, when the sink's thread ends.
    private let socket: Mutex<OwnedDescriptor?>
    /// A send failed and none has succeeded since: the next failure is not reported again.
    private let failing = Mutex(false)

    init(path: String, sendBuffer: Int) throws(Errno) {
        self.path = path
        let made = try UnixSocket.make(Int32(SOCK_DGRAM.rawValue))
        socket = Mutex(made)
        var size = Int32(clamping: sendBuffer)
        _ = try? Syscall.retrying {
            setsockopt(made.fd.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Sends one record: a datagram, or a sealed memfd when the record is too large for one.
    func send(_ record: [UInt8]) throws(Errno) {
        // Held for the whole send: a `close()` meanwhile closes it only after.
        guard let socket = socket.withLock({ $0 }) else { throw Errno.badFileDescriptor }
        try socket.borrow { (fd) throws(Errno) in
            do throws(Errno) {
                try UnixSocket.sendDatagram(record, on: fd, to: path)
            } catch  where error == .messageTooLong || error == .noBufferSpace {
                let memfd = try Syscall.sealedMemoryFile("cachewarden-journal", record)
                try memfd.borrow { (file) throws(Errno) in try UnixSocket.sendDescriptor(file, on: fd, to: path) }
            }
        }
    }

    /// Sends one record; `onError` hears the first failure of each run of them (the record is lost).
    func send(_ record: [UInt8], onError: (String) -> Void) {
        do throws(Errno) {
            try send(record)
            failing.withLock { $0 = false }
        } catch {
            let first = failing.withLock { was in
                defer { was = true }; return !was
            }
            if first { onError("cannot send to the journal (\(path)): \(error); records are lost until it answers") }
        }
    }

    func close() { socket.withLock { $0 = nil } }
}
