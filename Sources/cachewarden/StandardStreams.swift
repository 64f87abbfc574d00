import Glibc

/// Bytes to stdout and stderr with `write(2)`. Not Foundation's `FileHandle`: Foundation (rather than
/// FoundationEssentials) would bring ICU's data into the static binary for two file descriptors.
enum StandardStreams {
    /// Writes all of `bytes` to `fd`; false when the descriptor is gone (a closed pipe: `EPIPE` with SIGPIPE ignored).
    @discardableResult
    static func write(_ bytes: [UInt8], to fd: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }
    }

    /// One message on stderr, as it is (the caller ends it with a newline).
    static func error(_ text: String) {
        write(Array(text.utf8), to: 2)
    }

    /// `text` padded with spaces to `width` characters (never cut), for table columns.
    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
