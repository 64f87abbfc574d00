import CacheWarden
import CacheWardenFilesystem
import Dispatch
import Glibc
import SystemPackage

/// One client of the control socket. Confined to the server's queue (its read and write sources fire there);
/// requests are answered in order on a queue of the connection's own, so a long `clear` holds up only this client.
/// A client that goes `idleTimeout` seconds without a complete request, while no reply is being made for it and it
/// has not subscribed, is sent a note and disconnected.
///
/// `@unchecked Sendable` by that confinement: the server's queue (`serverQueue`, "cachewarden.control"), checked
/// with `assertOnQueue` at the entry points (debug builds).
final class ControlConnection: @unchecked Sendable {
    /// A request line longer than this is refused and the connection closed.
    static let maxLine = 64 * 1024

    /// The client's socket. `close()` drops it; the read and write sources' cancel handlers hold it too, so it
    /// closes once both sources are cancelled (as the server's listening socket does): a source never watches a
    /// number closed under it, which the kernel may have handed out again. The client sees EOF then, right after.
    private var socket: OwnedDescriptor?
    let id: Int
    private let serverQueue: DispatchQueue
    /// A serial queue on libdispatch's overcommit pool, which is not watched, and not on `.global()`: while
    /// `.global()` has work waiting, libdispatch opens `/proc/TID/stat` of its workers every second and kills the
    /// process (SIGILL, "workq: registered worker exited prematurely") when that open fails, as it does out of
    /// descriptors.
    let requests: DispatchQueue
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var input: [UInt8] = []
    private var output: [UInt8] = []
    private(set) var closed = false
    /// Events this client subscribed to (nil: not subscribed; empty: all).
    var subscription: Set<String>?
    /// Called with each complete request line (on the server queue).
    var onLine: ((ControlConnection, [UInt8]) -> Void)?
    var onClose: ((ControlConnection) -> Void)?

    private let idleTimeout: Double
    /// Requests read and not answered yet: a client waiting for a reply is not idle.
    private var unanswered = 0
    /// When the last complete request came or the last reply was made (uptime nanoseconds).
    private var lastActive = DispatchTime.now().uptimeNanoseconds

    init(socket: OwnedDescriptor, id: Int, serverQueue: DispatchQueue, idleTimeout: Double) {
        self.socket = socket
        self.id = id
        self.serverQueue = serverQueue
        self.idleTimeout = idleTimeout
        requests = DispatchQueue(label: "cachewarden.control.client\(id)")
    }

    func start() {
        assertOnQueue(serverQueue)
        guard let socket else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: socket.fd.rawValue, queue: serverQueue)
        source.setEventHandler { [weak self] in self?.readAvailable() }
        source.setCancelHandler { withExtendedLifetime(socket) {} }
        source.resume()
        readSource = source
        checkIdle(after: idleTimeout)
    }

    /// Sends the reply to one of this client's requests.
    func reply(_ bytes: [UInt8]) {
        assertOnQueue(serverQueue)
        unanswered -= 1
        lastActive = DispatchTime.now().uptimeNanoseconds
        send(bytes)
    }

    /// Closes the connection, with a note, once it is idle; else looks again when it could be.
    private func checkIdle(after seconds: Double) {
        serverQueue.asyncAfter(deadline: .now() + seconds) { [weak self] in
            guard let self, !closed, !refused, !closeWhenDrained else { return }
            let idle = Double(DispatchTime.now().uptimeNanoseconds - lastActive) / 1e9
            guard unanswered == 0, subscription == nil else { return checkIdle(after: idleTimeout) }
            guard idle >= idleTimeout else { return checkIdle(after: idleTimeout - idle) }
            let limit = idleTimeout == idleTimeout.rounded() ? String(Int(idleTimeout)) : String(idleTimeout)
            send(ControlReply.error(nil, "no request for \(limit) s: the connection is closed (idle)"))
            closeAfterLastWrite()
        }
    }

    /// Bytes queued for this client and not written yet.
    var queued: Int { output.count }

    /// Queues bytes for the client and writes what the socket takes now.
    func send(_ bytes: [UInt8]) {
        assertOnQueue(serverQueue)
        guard !closed && !refused else { return }
        output.append(contentsOf: bytes)
        flush()
    }

    /// Ends a subscription that fell too far behind: the queued lines are dropped (but the one a partial write may
    /// have started, so the client never sees half a line), `note` is queued, and the connection closes once the
    /// client has read it — or after `grace` seconds if it reads nothing.
    func endSubscription(note: [UInt8], grace: Double = 10) {
        assertOnQueue(serverQueue)
        subscription = nil
        if let newline = output.firstIndex(of: UInt8(ascii: "\n")) {
            output.removeSubrange((newline + 1)...)
        } else {
            output.removeAll()
        }
        closeWhenDrained = true
        send(note)
        serverQueue.asyncAfter(deadline: .now() + grace) { [weak self] in self?.close() }
    }

    private var closeWhenDrained = false

    /// Writes what the socket takes now of the queued bytes, then closes.
    func closeAfterLastWrite() {
        assertOnQueue(serverQueue)
        if !closed { flush() }
        close()
    }

    func close() {
        assertOnQueue(serverQueue)
        guard !closed else { return }
        closed = true
        readSource?.cancel()
        readSource = nil
        if let writeSource {
            if writeSuspended { writeSource.resume() } // a suspended source must not be released
            writeSource.cancel()
        }
        writeSource = nil
        socket = nil // closed when the cancel handlers above have run
        onClose?(self)
        onClose = nil
        onLine = nil
    }

    private func readAvailable() {
        assertOnQueue(serverQueue)
        guard let socket else { return }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n: Int
        do {
            n = try chunk.withUnsafeMutableBytes { buf in try Syscall.read(socket.fd, into: buf) }
        } catch {
            close()
            return
        }
        // A readable socket that reads nothing: the client closed its end.
        guard n > 0 else { close(); return }
        if refused { return } // the rest of a refused request: read and dropped
        input.append(contentsOf: chunk[0..<n])
        while let newline = input.firstIndex(of: UInt8(ascii: "\n")) {
            guard newline <= Self.maxLine else { refuseLongRequest(); return }
            let line = Array(input[..<newline])
            input.removeSubrange(...newline)
            unanswered += 1
            lastActive = DispatchTime.now().uptimeNanoseconds
            onLine?(self, line)
            if closed { return }
        }
        if input.count > Self.maxLine { refuseLongRequest() }
    }

    /// A request over `maxLine` bytes gets one error reply naming the limit, and the connection ends. Closing at
    /// once would leave the client's unread bytes in our queue, and the kernel then resets the connection
    /// (`ECONNRESET`) before the client reads the reply: so our end is shut for writing once the reply is out
    /// (the client reads the reply, then end of file), and the rest is read and dropped until the client closes
    /// its end, or for `grace` seconds at most.
    private func refuseLongRequest(grace: Double = 10) {
        input = []
        onLine = nil
        subscription = nil
        // The last bytes this client gets; nothing is queued after them (`send` drops what comes once refused).
        output.append(
            contentsOf: ControlReply.error(
                nil,
                "request line longer than the limit of \(Self.maxLine) bytes (\(Self.maxLine >> 10) KiB); send one JSON object per line"
            ))
        refused = true
        flush()
        serverQueue.asyncAfter(deadline: .now() + grace) { [weak self] in self?.close() }
    }

    private var refused = false
    private var shutForWriting = false

    private func flush() {
        assertOnQueue(serverQueue)
        guard let socket else { return }
        while !output.isEmpty {
            let n: Int
            do { n = try output.withUnsafeBytes { try UnixSocket.writeSome(socket.fd, $0) } } catch {
                close()
                return
            }
            if n == 0 { break }
            output.removeFirst(n)
        }
        if output.isEmpty {
            if closeWhenDrained { close(); return }
            if refused && !shutForWriting {
                shutForWriting = true
                _ = Glibc.shutdown(socket.fd.rawValue, Int32(SHUT_WR))
            }
            if let writeSource, !writeSuspended { writeSource.suspend(); writeSuspended = true }
        } else {
            armWriteSource()
        }
    }

    private var writeSuspended = false

    private func armWriteSource() {
        if let writeSource {
            if writeSuspended { writeSource.resume(); writeSuspended = false }
            return
        }
        guard let socket else { return }
        let source = DispatchSource.makeWriteSource(fileDescriptor: socket.fd.rawValue, queue: serverQueue)
        source.setEventHandler { [weak self] in self?.flush() }
        source.setCancelHandler { withExtendedLifetime(socket) {} }
        source.resume()
        writeSource = source
    }
}
