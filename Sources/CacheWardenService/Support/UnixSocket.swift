import CWardenShims
import CacheWarden
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Unix-domain sockets through the one syscall helper: the control socket's listener and its clients, and the
/// datagrams of systemd's notify protocol. A path starting with `@` names Linux's abstract namespace.
enum UnixSocket {
    /// An address for `path`; nil when it is too long for `sun_path`.
    static func address(_ path: String) -> (sockaddr_un, socklen_t)? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 } // abstract: a leading NUL, no terminator
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            if bytes.first != 0 { raw[bytes.count] = 0 }
        }
        let length = MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1)
        return (addr, socklen_t(length))
    }

    /// A close-on-exec socket of `type` (`SOCK_STREAM`, `SOCK_DGRAM`), non-blocking when asked.
    static func make(_ type: Int32, nonBlocking: Bool = false) throws(Errno) -> OwnedDescriptor {
        var flags = type | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { flags |= Int32(SOCK_NONBLOCK.rawValue) }
        return try OwnedDescriptor.opening { socket(AF_UNIX, flags, 0) }
    }

    static func bind(_ fd: FileDescriptor, _ path: String) throws(Errno) {
        try withAddress(path) { sa, length throws(Errno) in
            _ = try Syscall.retrying { Glibc.bind(fd.rawValue, sa, length) }
        }
    }

    /// Binds `fd` to `path` with the file created at 0600 at most, so it is never more open than that before the
    /// caller sets its mode. Linux creates a socket's file with the socket inode's mode less the umask, and that
    /// mode is set with `fchmod` on the unbound socket. Narrowing the umask instead is not an option: it is
    /// process-wide, and every file another thread of the process (an embedding app, a parallel test) created
    /// meanwhile would be 0600, its folders unsearchable.
    static func bindPrivately(_ fd: FileDescriptor, _ path: String) throws(Errno) {
        _ = try Syscall.retrying { fchmod(fd.rawValue, 0o600) }
        try bind(fd, path)
    }

    static func connect(_ fd: FileDescriptor, _ path: String) throws(Errno) {
        try withAddress(path) { sa, length throws(Errno) in
            _ = try Syscall.retrying { Glibc.connect(fd.rawValue, sa, length) }
        }
    }

    static func listen(_ fd: FileDescriptor, backlog: Int32 = 256) throws(Errno) {
        _ = try Syscall.retrying { Glibc.listen(fd.rawValue, backlog) }
    }

    /// Accepts a connection as a non-blocking, close-on-exec descriptor; nil when none is waiting. (`accept4` is
    /// not in Swift's Glibc module; the flags are set right after, before anyone else sees the descriptor.)
    static func accept(_ fd: FileDescriptor) throws(Errno) -> OwnedDescriptor? {
        let client: OwnedDescriptor
        do throws(Errno) { client = try OwnedDescriptor.opening { Glibc.accept(fd.rawValue, nil, nil) } } catch {
            if error == .wouldBlock || error == .resourceTemporarilyUnavailable { return nil }
            throw error
        }
        _ = try? Syscall.retrying { fcntl(client.fd.rawValue, F_SETFD, FD_CLOEXEC) }
        let flags = (try? Syscall.retrying { fcntl(client.fd.rawValue, F_GETFL) }) ?? 0
        _ = try? Syscall.retrying { fcntl(client.fd.rawValue, F_SETFL, flags | O_NONBLOCK) }
        return client
    }

    /// Sends one datagram to `path` from an unbound socket.
    static func sendDatagram(_ message: [UInt8], to path: String) throws(Errno) {
        let socket = try make(Int32(SOCK_DGRAM.rawValue))
        try socket.borrow { (fd) throws(Errno) in try sendDatagram(message, on: fd, to: path) }
    }

    /// Sends one datagram to `path` from the unbound datagram socket `fd`.
    static func sendDatagram(_ message: [UInt8], on fd: FileDescriptor, to path: String) throws(Errno) {
        try withAddress(path) { sa, length throws(Errno) in
            let sent: Result<Int, Errno> = message.withUnsafeBytes { bytes in
                Result { () throws(Errno) in
                    try Syscall.retrying {
                        sendto(fd.rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), sa, length)
                    }
                }
            }
            _ = try sent.get()
        }
    }

    /// Sends one empty datagram carrying `descriptor` (`SCM_RIGHTS`) to `path` from the unbound socket `fd`.
    static func sendDescriptor(_ descriptor: FileDescriptor, on fd: FileDescriptor, to path: String) throws(Errno) {
        try withAddress(path) { sa, length throws(Errno) in
            _ = try Syscall.retrying { cwsys_send_descriptor(fd.rawValue, sa, length, descriptor.rawValue) }
        }
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Errno) -> Void)
        throws(Errno)
    {
        guard let (address, length) = address(path) else { throw Errno.fileNameTooLong }
        var addr = address
        try withUnsafePointer(to: &addr) { p throws(Errno) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(Errno) in try body(sa, length) }
        }
    }

    /// Writes as much of `bytes` as the descriptor takes now; returns how much (0 when it is full).
    static func writeSome(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        do throws(Errno) {
            return try Syscall.retrying { send(fd.rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
        } catch {
            if error == .wouldBlock || error == .resourceTemporarilyUnavailable { return 0 }
            throw error
        }
    }
}
