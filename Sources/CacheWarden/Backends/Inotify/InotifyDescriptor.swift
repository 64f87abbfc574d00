import CInotify
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Owns one inotify instance: `inotify_init1(IN_NONBLOCK | IN_CLOEXEC)`, its watches and raw reads.
///
/// The descriptor is ours rather than libinotifytools' because that library keeps its descriptor in a static and
/// its watch table process-wide, which cannot feed a `DispatchSourceRead` (see CInotify.h).
package struct InotifyDescriptor: Sendable {
    /// Watch flags: only directories, no events for children already unlinked. (`IN_DONT_FOLLOW` is not set:
    /// watches are added through `/proc/self/fd/N`, a link the kernel must follow to the verified directory.)
    static let flags: UInt32 = CINOTIFY_IN_ONLYDIR | CINOTIFY_IN_EXCL_UNLINK

    /// Events every watched directory reports.
    package static let baseEvents: UInt32 =
        CINOTIFY_IN_CREATE | CINOTIFY_IN_DELETE | CINOTIFY_IN_MODIFY
        | CINOTIFY_IN_CLOSE_WRITE | CINOTIFY_IN_MOVED_FROM | CINOTIFY_IN_MOVED_TO | CINOTIFY_IN_ATTRIB
        | CINOTIFY_IN_DELETE_SELF | CINOTIFY_IN_MOVE_SELF

    /// Events the opens instance's directories report (`InotifyOpens`).
    package static let opensEvents: UInt32 = CINOTIFY_IN_OPEN | CINOTIFY_IN_CLOSE_WRITE | CINOTIFY_IN_CLOSE_NOWRITE

    /// Closes the instance when the last copy of this value (the backend's, its read source's) is gone.
    private let owner: OwnedDescriptor
    var fd: FileDescriptor { owner.fd }

    /// Opens a non-blocking, close-on-exec inotify instance.
    package init() throws(Errno) {
        owner = try OwnedDescriptor.opening { inotify_init1(CINOTIFY_IN_NONBLOCK | CINOTIFY_IN_CLOEXEC) }
    }

    /// Watches the directory open as `directory` for `mask` (`baseEvents`, or the opens instance's), through
    /// `/proc/self/fd/N` (never a path the kernel could resolve elsewhere). Returns the watch descriptor.
    package func addWatch(directory: FileDescriptor, mask: UInt32 = Self.baseEvents) throws(Errno) -> Int32 {
        try Array(directory.procPath.utf8).withCString { p throws(Errno) in
            try Syscall.retrying { inotify_add_watch(fd.rawValue, p, mask | Self.flags) }
        }
    }

    /// Removes a watch; one the kernel already dropped (`EINVAL`) is not an error.
    func removeWatch(_ wd: Int32) {
        _ = try? Syscall.retrying { inotify_rm_watch(fd.rawValue, wd) }
    }

    /// Reads queued records into `buffer`; 0 when nothing is queued.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try Syscall.read(fd, into: buffer)
    }

    /// The kernel's watch limit, for messages.
    static var maxUserWatches: Int { Int(cinotify_max_user_watches()) }
    static var maxUserInstances: Int { Int(cinotify_max_user_instances()) }

    /// The kernel's `fs.inotify.max_queued_events` (records one instance may queue); nil when unreadable. Read here,
    /// not through libinotifytools: its `inotifytools_get_max_queued_events` reads `max_queued_watches`, a file
    /// that does not exist, and answers -1 (inotify-tools/inotify-tools#240, Debian's 3.22.6).
    static var maxQueuedEvents: Int? {
        guard
            let file = try? OwnedDescriptor.opening({
                open("/proc/sys/fs/inotify/max_queued_events", O_RDONLY | O_CLOEXEC)
            })
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: 24)
        let read = file.borrow { fd in
            bytes.withUnsafeMutableBytes { b in Result { () throws(Errno) in try Syscall.read(fd, into: b) } }
        }
        guard let n = try? read.get() else { return nil }
        return Int(String(decoding: bytes[..<n].prefix { (0x30...0x39).contains($0) }, as: UTF8.self))
    }
}
