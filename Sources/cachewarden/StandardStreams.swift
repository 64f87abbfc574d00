import CacheWarden
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Bytes to stdout and stderr through the library's one write loop (`Syscall.writeAll`). Not Foundation's
/// `FileHandle`: Foundation (rather than FoundationEssentials) would bring ICU's data into the static binary.
enum StandardStreams {
    /// Writes all of `bytes` to `fd`; false when the descriptor is gone (a closed pipe: `EPIPE` with SIGPIPE ignored).
    @discardableResult
    static func write(_ bytes: [UInt8], to fd: FileDescriptor) -> Bool {
        bytes.withUnsafeBytes { (try? Syscall.writeAll(fd, $0)) != nil }
    }

    /// One message on stderr, as it is (the caller ends it with a newline).
    static func error(_ text: String) {
        write(Array(text.utf8), to: .standardError)
    }

    /// `text` padded with spaces to `width` characters (never cut), for table columns.
    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
