/// A file descriptor that closes itself, exactly once, when its last holder lets go: the one owner of every
/// descriptor that outlives a function (the walkers' directories, shared by the children still to be opened
/// from them; the inotify and epoll descriptors, held by the backend and by its read source's cancel handler
/// until the source is done with them, so a number is never closed while the kernel may still hand it out
/// again to a source that is cancelling). A class rather than a `~Copyable` struct because several holders
/// share it; nothing else calls `close` on its number.
final class OwnedDescriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { Syscall.close(fd) }
}
