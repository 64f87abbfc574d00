import CacheWarden
import CacheWardenFilesystem
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
        try write(bytes, mode: mode, to: temporary)
        defer { if !replacing { try? Syscall.unlink(path: temporary) } }
        do throws(Errno) {
            _ = try Syscall.retrying { replacing ? rename(temporary, path) : link(temporary, path) }
        } catch {
            if replacing { try? Syscall.unlink(path: temporary) }
            throw error
        }
    }

    /// Writes `bytes` to a new file at `temporary` with `mode`; on an error, the file is removed. Closed before
    /// this returns (its owner is held to the end), so the rename or link that follows names a complete file.
    private static func write(_ bytes: [UInt8], mode: mode_t, to temporary: String) throws(Errno) {
        let file = try OwnedDescriptor.opening {
            open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        }
        // Open to the end (a failed file is removed before it closes), as when its owner lived to the scope's end.
        try withExtendedLifetime(file) { () throws(Errno) in
            do throws(Errno) {
                let written: Result<Void, Errno> = bytes.withUnsafeBytes { b in
                    Result { () throws(Errno) in try Syscall.writeAll(file.fd, b) }
                }
                try written.get()
                _ = try Syscall.retrying { fchmod(file.fd.rawValue, mode) } // not narrowed by the umask
            } catch {
                try? Syscall.unlink(path: temporary)
                throw error
            }
        }
    }
}
