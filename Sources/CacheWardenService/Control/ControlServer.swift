import CacheWarden
import CacheWardenFilesystem
import Dispatch
import Glibc
import SystemPackage

/// The control socket of a running watcher: a Unix stream socket answering one JSON request per line (`status`,
/// `trim`, `clear`, `reload`, `subscribe`, `version`), the way watchman answers its JSON PDUs. It is also a sink:
/// subscribed clients receive the live event lines they asked for. It runs on a queue of its own, so clients —
/// slow, stuck, many at once, or sending garbage — never hold up the watcher: a subscriber more than 8 MiB behind
/// is disconnected with a note, a malformed request gets an error reply.
///
/// The socket file is created with `mode` (0600 by default; with group bits it takes its folder's group). A stale
/// socket file is replaced; one another process still answers on is an error. The file goes when the server stops.
///
/// `@unchecked Sendable`: its state is confined to `queue` ("cachewarden.control"): the public methods hop onto
/// it, the private ones check it with `assertOnQueue` (debug builds).
package final class ControlServer: EventSink, @unchecked Sendable {
    /// Bytes a subscriber may fall behind before it is disconnected.
    package static let maxQueuedPerSubscriber = 8 << 20
    /// Clients connected at once; one more gets an error reply and is disconnected.
    package static let maxConnections = 64
    /// Seconds a client may stay connected without a complete request (a subscriber, or a client waiting for a
    /// reply, is not idle).
    package static let idleTimeout = 60.0

    package let path: String
    private let mode: UInt16
    /// The bounds in force (tests lower them).
    let maxQueued: Int
    let maxConnections: Int
    let idleTimeout: Double
    /// Weak: the watcher holds this server among its sinks.
    private weak var watcher: Watcher?
    private var reload: @Sendable () -> String? = { "reload is not available" }
    private let queue = DispatchQueue(label: "cachewarden.control")
    /// The listening socket; the accept source's cancel handler holds it too, until the source is done with it.
    private var listener: OwnedDescriptor?
    private var socketIno: UInt64 = 0
    private var acceptSource: DispatchSourceRead?
    /// The accept source is suspended (`pauseAccepting`).
    private var acceptPaused = false
    private var connections: [Int: ControlConnection] = [:]
    private var nextID = 0

    /// A server at `path`, created with `mode`. Give it to the watcher among its sinks, then `listen` and `serve`.
    package convenience init(path: String, mode: UInt16 = 0o600) {
        self.init(path: path, mode: mode, maxQueued: Self.maxQueuedPerSubscriber)
    }

    init(
        path: String, mode: UInt16, maxQueued: Int, maxConnections: Int = ControlServer.maxConnections,
        idleTimeout: Double = ControlServer.idleTimeout
    ) {
        self.path = path
        self.mode = mode
        self.maxQueued = maxQueued
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
    }

    /// Creates the socket (before the watcher's first scan, so a second daemon fails at once). Clients that
    /// connect before `serve` wait in the backlog and are answered once it is called.
    /// - Throws: `WardenError` when the socket cannot be created, or another daemon answers on it.
    package func listen() throws(WardenError) {
        try replaceStaleSocket()
        let socket: OwnedDescriptor
        do throws(Errno) {
            // One that fails here closes as `socket` goes.
            socket = try UnixSocket.make(Int32(SOCK_STREAM.rawValue), nonBlocking: true)
            try UnixSocket.bindPrivately(socket.fd, path)
            try UnixSocket.listen(socket.fd)
            try applyMode()
            socketIno = UInt64(try Syscall.lstat(path: path).st_ino)
        } catch {
            throw .system(operation: "listen on control socket", path: path, errno: error.rawValue)
        }
        queue.sync { listener = socket }
    }

    /// Starts answering about `watcher` (call `listen` first). `reload` re-reads the settings and applies them,
    /// returning nil or what went wrong.
    package func serve(watcher: Watcher, reload: @escaping @Sendable () -> String?) {
        queue.sync {
            guard let listener, acceptSource == nil else { return }
            self.watcher = watcher
            self.reload = reload
            let source = DispatchSource.makeReadSource(fileDescriptor: listener.fd.rawValue, queue: queue)
            source.setEventHandler { [unowned self] in self.acceptAll() }
            source.setCancelHandler { withExtendedLifetime(listener) {} }
            source.resume()
            acceptSource = source
        }
    }

    /// Stops answering, disconnects every client (after a last attempt to write what is queued for it) and removes
    /// the socket file (if it is still ours). Idempotent.
    package func stop() {
        queue.sync {
            resumeAccepting() // a suspended source must not be released
            acceptSource?.cancel()
            acceptSource = nil
            for c in connections.values { c.closeAfterLastWrite() }
            connections.removeAll()
            if listener != nil, let st = try? Syscall.lstat(path: path), UInt64(st.st_ino) == socketIno {
                _ = try? Array(path.utf8).withCString { p throws(Errno) in
                    try Syscall.unlink(at: Syscall.currentDirectory, p)
                }
            }
            listener = nil
        }
    }

    /// A socket file at the path: replaced when nobody answers on it; an error when a daemon does.
    private func replaceStaleSocket() throws(WardenError) {
        guard let st = try? Syscall.lstat(path: path) else { return }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else {
            throw .system(operation: "control socket: not a socket, refusing to replace", path: path, errno: EEXIST)
        }
        if let probe = try? UnixSocket.make(Int32(SOCK_STREAM.rawValue)),
            probe.borrow({ (try? UnixSocket.connect($0, path)) != nil })
        {
            throw .system(operation: "control socket: another daemon answers on", path: path, errno: EADDRINUSE)
        }
        _ = try? Array(path.utf8).withCString { p throws(Errno) in try Syscall.unlink(at: Syscall.currentDirectory, p) }
    }

    /// The socket's mode; with group bits, its folder's group.
    private func applyMode() throws(Errno) {
        _ = try Syscall.retrying { chmod(path, mode_t(mode)) }
        if mode & 0o060 != 0, let folder = try? Syscall.lstat(path: PathResolver.parent(of: path)) {
            _ = try Syscall.retrying { chown(path, UInt32.max, folder.st_gid) }
        }
    }

    private func acceptAll() {
        assertOnQueue(queue)
        while true {
            let client: OwnedDescriptor
            do throws(Errno) {
                guard let listener, let accepted = try UnixSocket.accept(listener.fd) else { return }
                client = accepted
            } catch {
                if error == .connectionAbort { continue } // that client left before it was accepted
                pauseAccepting()
                return
            }
            guard connections.count < maxConnections else { turnAway(client); continue }
            nextID += 1
            let c = ControlConnection(socket: client, id: nextID, serverQueue: queue, idleTimeout: idleTimeout)
            c.onLine = { [unowned self] c, line in self.handle(line, from: c) }
            c.onClose = { [unowned self] c in
                self.connections[c.id] = nil
                self.resumeAccepting()
            }
            connections[c.id] = c
            c.start()
        }
    }

    /// A client beyond `maxConnections`: one error reply (a new socket's buffer takes it whole), and it is closed.
    private func turnAway(_ client: OwnedDescriptor) {
        assertOnQueue(queue)
        let note = ControlReply.error(nil, "too many clients: \(maxConnections) are connected; try again later")
        _ = try? note.withUnsafeBytes { try UnixSocket.writeSome(client.fd, $0) }
        // Closed as `client` goes.
    }

    /// How long accepting pauses after it failed, unless a client leaves first.
    static let acceptPause = 0.25

    /// Accepting failed: out of descriptors (`EMFILE`, `ENFILE`) or memory. The client stays in the backlog and the
    /// listener stays readable, so the accept source would fire again at once, and did, taking half a core. It is
    /// suspended instead, until a client leaves (its descriptor is free again) or `acceptPause` has passed.
    private func pauseAccepting() {
        assertOnQueue(queue)
        guard let acceptSource, !acceptPaused else { return }
        acceptPaused = true
        acceptSource.suspend()
        queue.asyncAfter(deadline: .now() + Self.acceptPause) { [weak self] in self?.resumeAccepting() }
    }

    private func resumeAccepting() {
        assertOnQueue(queue)
        guard let acceptSource, acceptPaused else { return }
        acceptPaused = false
        acceptSource.resume()
    }

    // MARK: Requests

    /// Every reply, an error's too, is made on the client's own queue and sent from this one, so replies leave in
    /// the order of the requests; a subscription starts once the requests before it are answered.
    private func handle(_ line: [UInt8], from c: ControlConnection) {
        c.requests.async { [weak self, weak c] in
            guard let self, let client = c else { return }
            let (reply, subscription) = self.answer(ControlRequest.parse(line))
            self.queue.async {
                if let subscription { client.subscription = subscription }
                client.reply(reply)
            }
        }
    }

    /// The reply to a request as parsed, and the events it subscribes to (nil: not a subscription).
    private func answer(_ parsed: Result<ControlRequest, ControlError>) -> ([UInt8], Set<String>?) {
        switch parsed {
        case .failure(let error): (ControlReply.error(error.command, error.message), nil)
        case .success(.subscribe(let events)):
            (ControlReply.ok("subscribe") { $0.add("events", events.sorted()) }, events)
        case .success(let request): (answer(request), nil)
        }
    }

    private func answer(_ request: ControlRequest) -> [UInt8] {
        guard let watcher else { return ControlReply.error(nil, "the watcher has stopped") }
        switch request {
        case .status: return ControlReply.status(watcher.status(), groups: watcher.groups)
        case .version: return ControlReply.version()
        case .trim(let dir, let to):
            do throws(WardenError) { return ControlReply.trim(try watcher.trim(dir, to: to)) } catch {
                return refusal("trim", error, watcher)
            }
        case .clear(let dirs, let dryRun):
            do throws(WardenError) {
                return ControlReply.clear(try watcher.clear(dirs, dryRun: dryRun), dryRun: dryRun)
            } catch {
                return refusal("clear", error, watcher)
            }
        case .reload:
            if let problem = queue.sync(execute: { reload })() { return ControlReply.error("reload", problem) }
            return ControlReply.ok("reload")
        case .subscribe: return ControlReply.error(nil, "subscribe is answered with its subscription")
        }
    }

    /// The error reply of a refused `trim` or `clear`; with `"busy"` when a client holds its lock.
    private func refusal(_ command: String, _ error: WardenError, _ watcher: Watcher) -> [UInt8] {
        guard case .clientLockBusy(let busy) = error else { return ControlReply.error(command, error.description) }
        return ControlReply.busy(command, busy, message: error.description, waitLimit: watcher.clientLockWait)
    }

    // MARK: Subscriptions (the sink)

    package func receive(_ events: [WardenEvent]) {
        queue.async { [weak self] in self?.fanOut(events) }
    }

    /// The watcher stopped: its last lines (`stop`) go out to subscribers, then the socket closes and its file goes.
    package func finish() { stop() }

    /// Each subscriber gets the lines it asked for in one write per batch (not one per line: a socket buffer
    /// holds far more bytes in a few large writes than in many small ones).
    private func fanOut(_ events: [WardenEvent]) {
        assertOnQueue(queue)
        let subscribers = connections.values.filter { $0.subscription != nil }
        guard !subscribers.isEmpty else { return }
        let lines = events.map { ($0.name, $0.jsonLineBytes()) }
        for c in subscribers {
            guard let wanted = c.subscription else { continue }
            var bytes: [UInt8] = []
            for (name, line) in lines where wanted.isEmpty || wanted.contains(name) { bytes.append(contentsOf: line) }
            guard !bytes.isEmpty else { continue }
            c.send(bytes)
            if c.queued > maxQueued {
                c.endSubscription(
                    note: ControlReply.error(
                        "subscribe",
                        "subscriber too slow: more than \(maxQueued) bytes queued, later lines dropped; disconnected"))
            }
        }
    }
}
