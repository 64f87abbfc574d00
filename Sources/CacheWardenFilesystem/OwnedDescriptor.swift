import Glibc
import SystemPackage

/// A file descriptor that closes itself, exactly once, when its last holder lets go: the one owner of every
/// descriptor CacheWarden opens (the walkers' directories, shared by the children still to be opened from them;
/// the inotify and epoll descriptors, held by the backend and by its read source's cancel handler until the
/// source is done with them, so a number is never closed while the kernel may still hand it out again to a
/// source that is cancelling). A class rather than a `~Copyable` struct because several holders share it, and
/// because descriptors are kept in arrays, dictionaries and closures, which cannot hold a noncopyable value.
/// Nothing else calls `close`: code that uses a descriptor borrows it as swift-system's `FileDescriptor`
/// (`fd`), which never closes, while it holds its owner.
package final class OwnedDescriptor: Sendable {
    /// The descriptor, borrowed: valid while this owner is alive.
    package let fd: FileDescriptor

    /// Takes ownership of a descriptor just returned by the kernel (closed as this owner goes).
    private init(taking raw: CInt) { fd = FileDescriptor(rawValue: raw) }

    /// Runs `open` (retried on `EINTR`) and owns the descriptor it returns: the one way a raw descriptor number
    /// becomes a value outside `Syscall`.
    package static func opening(_ open: () -> CInt) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(taking: try Syscall.retrying(open))
    }

    /// Runs `body` with the descriptor, this owner kept alive until `body` returns. Swift releases a local owner
    /// after its last use, which may be the reading of `fd` passed to a call: a call that takes `fd` alone must
    /// borrow it this way (or within `withExtendedLifetime`), so that the close waits for the call.
    package func borrow<R, E: Error>(_ body: (FileDescriptor) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in try body(fd) }
    }

    /// `close(2)`, ignoring its result: on Linux the descriptor is released even when close reports an error
    /// (retrying on `EINTR` could close a descriptor another thread just got).
    deinit { _ = Glibc.close(fd.rawValue) }
}

extension FileDescriptor {
    /// `/proc/self/fd/N`: the path the kernel resolves to this very descriptor's file, for watches and messages.
    package var procPath: String { "/proc/self/fd/\(rawValue)" }
    /// `/proc/self/fdinfo/N`: the kernel's notes on this descriptor (its mount ID, its locks).
    package var procInfoPath: String { "/proc/self/fdinfo/\(rawValue)" }
}
