import CacheWardenFilesystem
import Glibc
import SystemPackage

/// The one reader of small text files: config files, and what discovery looks at (`.bazelrc`, nginx's
/// configuration, `CACHEDIR.TAG`). Only a regular file is read, so that a FIFO or a device named by mistake
/// (`/dev/zero`, a pipe nobody writes) cannot stall a command.
package enum FileContents {
    /// Why a file was not read.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// `open` or `read` failed.
        case system(Int32)
        /// Not a regular file; `kind` names what it is ("a FIFO", "a directory", …).
        case notRegular(kind: String)
        /// Larger than `limit` bytes (`strict` reads only).
        case tooLarge(limit: Int)

        package var description: String {
            switch self {
            case .system(let e): String(cString: strerror(e))
            case .notRegular(let kind): "it is \(kind), not a regular file"
            case .tooLarge(let limit):
                "it is larger than \(limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes")"
            }
        }
    }

    /// The file's text (invalid UTF-8 replaced). At most `limit` bytes are read: with `strict`, a longer file is
    /// an error (a config file must be read whole); without, its first `limit` bytes are returned.
    package static func load(_ path: String, limit: Int, strict: Bool = false) throws(Failure) -> String {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular file is read.
        let file: OwnedDescriptor
        do throws(Errno) {
            file = try Array(path.utf8).withCString { p throws(Errno) in
                try OwnedDescriptor.opening { open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
            }
        } catch { throw .system(error.rawValue) }
        let st: stat
        do throws(Errno) { st = try Syscall.fstat(file.fd) } catch { throw .system(error.rawValue) }
        guard st.isRegularFile else { throw .notRegular(kind: kind(of: st.st_mode)) }
        // One byte past the limit tells a file of exactly `limit` bytes from a longer one.
        let wanted = strict && limit < Int.max ? limit + 1 : limit
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < wanted {
            let count = min(chunk.count, wanted - bytes.count)
            let read = chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in
                    try Syscall.read(file.fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]))
                }
            }
            let n: Int
            switch read {
            case .success(let k): n = k
            case .failure(let e): throw .system(e.rawValue)
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        if strict && bytes.count > limit { throw .tooLarge(limit: limit) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first `limit` bytes of a regular file, or nil when it cannot be read.
    package static func read(_ path: String, limit: Int = Int.max) -> String? {
        try? load(path, limit: limit)
    }

    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }
}
