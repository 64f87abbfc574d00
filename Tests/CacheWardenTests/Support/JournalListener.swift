import SystemPackage
import Foundation
import Glibc
import Synchronization
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenService

/// A datagram socket standing in for journald's `/run/systemd/journal/socket`: it receives records as journald
/// does — a datagram, or an empty datagram carrying a memfd (`SCM_RIGHTS`) — and parses the native protocol,
/// both the plain (`NAME=value\n`) and the binary (`NAME\n`, 64-bit little-endian length, bytes, `\n`) forms.
final class JournalListener: Sendable {
    struct Record: Sendable {
        /// Every field in order (a name may repeat).
        var fields: [(name: String, value: String)]
        /// Names that came in the binary form.
        var binary: Set<String>
        /// The record came through a memfd.
        var viaMemfd: Bool

        subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }
        func all(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
    }

    let path: String
    private let socket: OwnedDescriptor
    private let received = Mutex<[Record]>([])

    init(path: String) throws {
        self.path = path
        socket = try UnixSocket.make(Int32(SOCK_DGRAM.rawValue))
        try UnixSocket.bind(socket.fd, path)
        let fd = socket.fd
        Foundation.Thread.detachNewThread { [self] in
            while let (data, passed) = Self.receive(fd.rawValue) {
                var bytes = data
                if let passed { bytes = Self.readAll(passed); close(passed) }
                received.withLock { $0.append(Record(bytes: bytes, viaMemfd: passed != nil)) }
            }
        }
    }

    deinit {
        shutdown(socket.fd.rawValue, Int32(SHUT_RDWR))
        unlink(path)
    }

    var records: [Record] { received.withLock { $0 } }
    func events(_ name: String) -> [Record] { records.filter { $0["CACHEWARDEN_EVENT"] == name } }

    /// One datagram and the descriptor it carried, if any; nil when the socket is shut down.
    private static func receive(_ fd: Int32) -> ([UInt8], Int32?)? {
        var data = [UInt8](repeating: 0, count: 1 << 20)
        var control = [UInt64](repeating: 0, count: 8) // aligned room for one cmsghdr and a descriptor
        let (length, controlLength) = data.withUnsafeMutableBytes { d in
            control.withUnsafeMutableBytes { c in
                var iov = iovec(iov_base: d.baseAddress, iov_len: d.count)
                return withUnsafeMutablePointer(to: &iov) { iovp in
                    var msg = msghdr(
                        msg_name: nil, msg_namelen: 0, msg_iov: iovp, msg_iovlen: 1,
                        msg_control: c.baseAddress, msg_controllen: c.count, msg_flags: 0)
                    let n = recvmsg(fd, &msg, 0)
                    return (n, n < 0 ? 0 : Int(msg.msg_controllen))
                }
            }
        }
        if length < 0 || (length == 0 && controlLength == 0) { return nil }
        var passed: Int32?
        if controlLength > 0 {
            // struct cmsghdr { size_t len; int level; int type; } then the data (64-bit Linux layout).
            let header = control.withUnsafeBytes { $0 }
            let level = header.load(fromByteOffset: 8, as: Int32.self),
                type = header.load(fromByteOffset: 12, as: Int32.self)
            if level == SOL_SOCKET && type == 1 /* SCM_RIGHTS */ {
                passed = header.load(fromByteOffset: MemoryLayout<cmsghdr>.size, as: Int32.self)
            }
        }
        return (Array(data[0..<length]), passed)
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var offset: off_t = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n <= 0 { return out }
            out += chunk[0..<n]
            offset += off_t(n)
        }
    }
}

extension JournalListener.Record {
    /// Parses the native protocol.
    init(bytes b: [UInt8], viaMemfd: Bool) {
        fields = []
        binary = []
        self.viaMemfd = viaMemfd
        var i = 0
        while i < b.count, let nl = b[i...].firstIndex(of: 0x0A) {
            if let eq = b[i..<nl].firstIndex(of: UInt8(ascii: "=")) {
                fields.append(
                    (String(decoding: b[i..<eq], as: UTF8.self), String(decoding: b[(eq + 1)..<nl], as: UTF8.self)))
                i = nl + 1
            } else {
                let name = String(decoding: b[i..<nl], as: UTF8.self)
                var length: UInt64 = 0
                for k in 0..<8 { length |= UInt64(b[nl + 1 + k]) << (8 * UInt64(k)) }
                let start = nl + 9, end = start + Int(length)
                precondition(end < b.count && b[end] == 0x0A, "binary field \(name) is not closed by a newline")
                fields.append((name, String(decoding: b[start..<end], as: UTF8.self)))
                binary.insert(name)
                i = end + 1
            }
        }
    }
}
