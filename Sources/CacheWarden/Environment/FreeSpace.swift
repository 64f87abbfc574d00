import CacheWardenFilesystem
import Glibc
import SystemPackage

/// The one free-space helper: `statvfs` of a path, as the low-disk policy, `status` and metrics read it.
struct FreeSpace: Equatable, Sendable {
    /// Bytes available to unprivileged users (`f_bavail × f_frsize`).
    var free: Int64
    /// The filesystem's size (`f_blocks × f_frsize`).
    var size: Int64

    /// Free space of the filesystem holding `path`.
    static func of(_ path: String) throws(Errno) -> FreeSpace {
        let vfs = try Syscall.statfs(path)
        return FreeSpace(
            free: Int64(vfs.f_bavail) * Int64(vfs.f_frsize), size: Int64(vfs.f_blocks) * Int64(vfs.f_frsize))
    }

    /// The mount point holding `path`: its highest ancestor on the same device.
    static func mountPoint(of path: String) -> String {
        guard let st = try? Syscall.lstat(path: path) else { return path }
        var current = path
        while current != "/" {
            let parent = PathResolver.parent(of: current)
            guard let pst = try? Syscall.lstat(path: parent), pst.st_dev == st.st_dev else { break }
            current = parent
        }
        return current
    }
}
