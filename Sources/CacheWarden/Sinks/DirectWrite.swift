import CacheWardenFilesystem
import Glibc
import SystemPackage

/// A write to a descriptor that never blocks, for `JSONLinesSink`'s inline writes: a batch goes out on the
/// engine's queue when the destination has room, sparing the writer thread's wake-up. Nil where that cannot be had
/// without changing a description others share (a terminal, a device), and for a regular file: its write does not
/// wait for a reader, but on a network filesystem that has hung it waits for good, and the engine must never.
/// A pipe or FIFO is opened again through `/proc/self/fd` non-blocking (a description of its own: the shared one
/// keeps its flags); a socket is sent to with `MSG_DONTWAIT`.
final class DirectWrite: Sendable {
    private enum Way { case pipe, socket }
    private let way: Way
    /// The descriptor written: the pipe's own non-blocking one, or the socket's (borrowed from the sink's caller).
    private let fd: FileDescriptor
    /// The pipe's own descriptor, closed with this value.
    private let owned: OwnedDescriptor?

    init?(_ fd: FileDescriptor) {
        guard let st = try? Syscall.fstat(fd) else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFSOCK:
            (self.fd, way, owned) = (fd, .socket, nil)
        case S_IFIFO:
            // With no reader this fails (ENXIO): the thread then meets the closed pipe.
            guard let reopened = try? Syscall.reopenNonBlocking(fd) else { return nil }
            (self.fd, way, owned) = (reopened.fd, .pipe, reopened)
        default:
            return nil
        }
    }

    /// Writes what fits of `bytes` now; returns how many bytes were written (0 when full, or on any error).
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard !bytes.isEmpty else { return 0 }
        let written = withExtendedLifetime(owned) {
            way == .socket ? try? Syscall.sendNow(fd, bytes) : try? Syscall.writeNow(fd, bytes)
        }
        return written ?? 0
    }
}
