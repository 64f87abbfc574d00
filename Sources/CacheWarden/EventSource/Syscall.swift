import Glibc
import SystemPackage

/// The one place where system calls are retried on `EINTR` and their failures turned into typed `Errno` values,
/// in the manner of swift-system: every raw call in CacheWarden goes through `Syscall.retrying`.
enum Syscall {
    /// Runs `body` until it does not fail with `EINTR`; returns its result or throws the `errno` it left.
    @inline(__always)
    static func retrying<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw Errno(rawValue: code)
        }
    }

    /// `openat(2)` of a directory that must not be a symlink, close-on-exec.
    static func openDirectory(at dirfd: Int32, _ name: UnsafePointer<CChar>) throws(Errno) -> Int32 {
        try retrying { openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
    }

    /// `fstatat(2)` without following a final symlink.
    static func lstat(at dirfd: Int32, _ name: UnsafePointer<CChar>) throws(Errno) -> stat {
        var st = stat()
        _ = try retrying { fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) }
        return st
    }

    /// `fstat(2)` of an open descriptor.
    static func fstat(_ fd: Int32) throws(Errno) -> stat {
        var st = stat()
        _ = try retrying { Glibc.fstat(fd, &st) }
        return st
    }

    /// `close(2)`, ignoring its result: on Linux the descriptor is released even when close reports an error.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}

extension stat {
    var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
    var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
    var isSymlink: Bool { (st_mode & S_IFMT) == S_IFLNK }
    var mtimeNanoseconds: Int64 { Int64(st_mtim.tv_sec) * 1_000_000_000 + Int64(st_mtim.tv_nsec) }
    var atimeNanoseconds: Int64 { Int64(st_atim.tv_sec) * 1_000_000_000 + Int64(st_atim.tv_nsec) }
    var ctimeNanoseconds: Int64 { Int64(st_ctim.tv_sec) * 1_000_000_000 + Int64(st_ctim.tv_nsec) }
}
