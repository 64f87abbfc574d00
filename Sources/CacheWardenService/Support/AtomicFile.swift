import CacheWarden
import Glibc
import SystemPackage

/// Replaces a file's contents so that readers see the old file or the new one, never a half-written one: the bytes
/// go to a temporary file in the same folder (a dot name that does not end in `.prom`, so node_exporter's textfile
/// collector skips it), which is then renamed over the target — or, with `replacing: false`, linked to the target's
/// name, which fails with `EEXIST` when a file is already there (no window in which an existing file is clobbered).
package enum AtomicFile {
    package static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o644, replacing: Bool = true)
        throws(Errno)
    {
        let folder = PathResolver.parent(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let temporary = PathResolver.absolute(".\(name).\(getpid()).tmp", relativeTo: folder)
        let fd = try Syscall.retrying { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode) }
        do throws(Errno) {
            defer { Syscall.close(fd) }
            let written: Result<Void, Errno> = bytes.withUnsafeBytes { b in
                Result { () throws(Errno) in try Syscall.writeAll(fd, b) }
            }
            try written.get()
            _ = try Syscall.retrying { fchmod(fd, mode) } // not narrowed by the umask
        } catch {
            try? Syscall.unlink(path: temporary)
            throw error
        }
        defer { if !replacing { try? Syscall.unlink(path: temporary) } }
        do throws(Errno) {
            _ = try Syscall.retrying { replacing ? rename(temporary, path) : link(temporary, path) }
        } catch {
            if replacing { try? Syscall.unlink(path: temporary) }
            throw error
        }
    }
}
