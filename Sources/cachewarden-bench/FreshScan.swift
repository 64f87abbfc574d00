import Glibc
import SystemPackage

/// The ground truth for the exactness checks: a fresh walk of a tree, independent of the library.
struct FreshScan: Sendable, Equatable {
    /// Regular files, hard links counted once.
    var files: Int
    /// Sum of their `st_size` (size basis `apparent`).
    var bytes: Int64

    /// Walks `root` with `openat`/`fdopendir`/`fstatat` (symlinks not followed, other filesystems included).
    static func of(_ root: String) -> FreshScan {
        var result = FreshScan(files: 0, bytes: 0)
        var seenLinks = Set<[UInt64]>()
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { walk(fd, &result, &seenLinks) }
        return result
    }

    /// Takes `fd` over: it is handed to `fdopendir`, whose `DIR` owns it from then on (`closedir` closes it), as
    /// `du`'s walk does. A raw number, not a `FileDescriptor` (borrowed, never closed by its receiver) nor an
    /// `OwnedDescriptor` (which would close it a second time): this stands in for `du`, with its syscalls.
    private static func walk(_ fd: CInt, _ result: inout FreshScan, _ seenLinks: inout Set<[UInt64]>) {
        guard let dir = fdopendir(fd) else { close(fd); return }
        defer { closedir(dir) }
        let dfd = dirfd(dir)
        while let entry = readdir(dir) {
            var nameBuffer = entry.pointee.d_name
            let next: Int32? = withUnsafePointer(to: &nameBuffer) { raw in
                raw.withMemoryRebound(to: CChar.self, capacity: 256) { name -> Int32? in
                    if name[0] == 46 && (name[1] == 0 || (name[1] == 46 && name[2] == 0)) { return nil } // . and ..
                    var st = stat()
                    guard fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
                    switch st.st_mode & S_IFMT {
                    case S_IFDIR:
                        return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    case S_IFREG:
                        if st.st_nlink > 1 && !seenLinks.insert([UInt64(st.st_dev), UInt64(st.st_ino)]).inserted {
                            return nil
                        }
                        result.files += 1
                        result.bytes += Int64(st.st_size)
                        return nil
                    default:
                        return nil
                    }
                }
            }
            if let next, next >= 0 { walk(next, &result, &seenLinks) }
        }
    }
}
