import CacheWarden
import CacheWardenFilesystem
import FoundationEssentials
import Glibc
import SystemPackage

/// A client of a daemon's control socket (what `cachewarden status`, `trim`, `clear`, `reload` and `events` use):
/// sends one JSON request per line and reads the reply lines. The typed calls (`status()`, `trim(_:to:)`, …) are
/// in `ControlClient+Requests`.
package final class ControlClient {
    private let socket: OwnedDescriptor
    private var buffer: [UInt8] = []
    /// The socket this client is connected to.
    package let path: String
    /// Seconds to wait for a reply line before giving up.
    package var timeout: Double

    /// Connects to the socket at `path`; nil when nobody answers there.
    /// - Throws: `ControlClientError` when a socket is there that this user may not connect to (`EACCES`, `EPERM`).
    package init?(path: String, timeout: Double = 30) throws(ControlClientError) {
        guard let socket = try? UnixSocket.make(Int32(SOCK_STREAM.rawValue)) else { return nil }
        do throws(Errno) { try UnixSocket.connect(socket.fd, path) } catch {
            guard error == .permissionDenied || error == .notPermitted else { return nil }
            throw ControlClientError(
                "permission denied on \(path): this user may not connect to the daemon's socket (run as the daemon's user, or give the socket a group with control_socket_mode = 0660)"
            )
        }
        self.socket = socket
        self.path = path
        self.timeout = timeout
    }

    /// Sends `request` (one JSON object) and returns the reply, parsed.
    package func request(_ request: [String: JSONValue]) throws -> [String: JSONValue] {
        try send(request)
        guard let line = try readLine() else {
            throw ControlClientError("the daemon closed the connection without a reply")
        }
        guard let reply = (try? JSONValue(parsing: line))?.object else {
            throw ControlClientError(
                "the daemon's reply is not a JSON object: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
        return reply
    }

    /// Sends one request line.
    package func send(_ request: [String: JSONValue]) throws {
        var line = JSONValue.object(request).jsonBytes()
        line.append(UInt8(ascii: "\n"))
        try sendRaw(line)
    }

    /// Sends bytes as they are (tests use it for malformed requests).
    package func sendRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = try bytes[offset...].withUnsafeBytes { try UnixSocket.writeSome(socket.fd, $0) }
            guard n > 0 else { throw ControlClientError("the daemon does not read its socket") }
            offset += n
        }
    }

    /// The next line from the daemon (without its newline); nil when it closed the connection. Waits up to
    /// `timeout` seconds (forever when `wait` is true, as a subscription does).
    package func readLine(wait: Bool = false) throws -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                defer { buffer.removeSubrange(...newline) }
                return Array(buffer[..<newline])
            }
            var p = pollfd(fd: socket.fd.rawValue, events: Int16(POLLIN), revents: 0)
            let ready = try Syscall.retrying { poll(&p, 1, wait ? -1 : Int32(timeout * 1000)) }
            guard ready > 0 else { throw ControlClientError("no reply from the daemon within \(timeout) s") }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = try chunk.withUnsafeMutableBytes { try Syscall.read(socket.fd, into: $0) }
            if n == 0 {
                defer { buffer.removeAll() }
                return buffer.isEmpty ? nil : buffer
            }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Where a daemon's socket is, when none is configured: systemd's `RuntimeDirectory` of the unit we ship.
    package static func defaultPath(environment given: [String: String]? = nil) -> String {
        let environment = given ?? ProcessEnvironment.variables
        return DefaultLocations(environment: environment, euid: 0).serviceSocket ?? DefaultLocations.systemSocket
    }
}

/// The daemon could not be talked to, or refused the request (`refused`; its message says what to fix).
package struct ControlClientError: Error, CustomStringConvertible {
    package var description: String
    /// The daemon answered `"ok": false`: the request (or the file it re-read) was wrong, not the connection.
    package var refused: Bool
    /// The daemon refused a `trim` or `clear` because a cache's client holds its lock (nothing was deleted): who
    /// holds it, and how long the daemon lets its own trims wait (`client_lock_wait`, seconds).
    package var busy: ClientLockBusy?
    package var waitLimit: Int64?

    package init(_ description: String, refused: Bool = false) {
        self.description = description
        self.refused = refused
    }
}
