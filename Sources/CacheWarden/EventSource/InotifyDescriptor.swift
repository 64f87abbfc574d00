import CInotify
import Glibc
import SystemPackage

/// Owns one inotify instance: `inotify_init1(IN_NONBLOCK | IN_CLOEXEC)`, watches, and raw reads.
///
/// The descriptor is ours rather than libinotifytools' because that library keeps its descriptor in a static and
/// its watch table process-wide, which cannot feed a `DispatchSourceRead` (see CInotify.h).
struct InotifyDescriptor {
    /// Directory watch flags: never follow a symlink, only watch directories, no events for unlinked children.
    static let directoryFlags: UInt32 = CINOTIFY_IN_ONLYDIR | CINOTIFY_IN_DONT_FOLLOW | CINOTIFY_IN_EXCL_UNLINK

    /// Events every watched directory reports.
    static let directoryEvents: UInt32 = CINOTIFY_IN_CREATE | CINOTIFY_IN_DELETE | CINOTIFY_IN_MODIFY
        | CINOTIFY_IN_CLOSE_WRITE | CINOTIFY_IN_MOVED_FROM | CINOTIFY_IN_MOVED_TO | CINOTIFY_IN_ATTRIB
        | CINOTIFY_IN_DELETE_SELF | CINOTIFY_IN_MOVE_SELF

    let fd: Int32

    /// Opens a non-blocking, close-on-exec inotify instance.
    init() throws(Errno) {
        fd = try Syscall.retrying { inotify_init1(CINOTIFY_IN_NONBLOCK | CINOTIFY_IN_CLOEXEC) }
    }

    /// Removes a watch; a watch the kernel already dropped (`EINVAL`) is not an error.
    func removeWatch(_ wd: Int32) {
        _ = inotify_rm_watch(fd, wd)
    }

    /// Reads queued records into `buffer`; returns the byte count, or 0 when nothing is queued (`EAGAIN`).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        do throws(Errno) {
            return try Syscall.retrying { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        } catch {
            if error == .wouldBlock || error == .resourceTemporarilyUnavailable { return 0 }
            throw error
        }
    }

    func close() { Syscall.close(fd) }
}

/// One decoded inotify record; `name` is the raw bytes of the entry name (empty for the directory itself).
struct InotifyEvent {
    var wd: Int32
    var mask: UInt32
    var cookie: UInt32
    var name: [UInt8]

    func has(_ bit: UInt32) -> Bool { mask & bit != 0 }
    var isDirectory: Bool { has(CINOTIFY_IN_ISDIR) }

    /// Readable mask for debug output ("CREATE,ISDIR"), via libinotifytools. Call on the watcher's queue only.
    var maskDescription: String { String(cString: cinotify_mask_names(mask)) }

    /// Decodes every complete record in `bytes` (the result of one read) with the C shim.
    static func decode(_ bytes: UnsafeRawBufferPointer, into events: inout [InotifyEvent]) {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var offset = 0
        var record = cinotify_event()
        while true {
            let next = cinotify_next_event(base, bytes.count, offset, &record)
            if next < 0 { break }
            let name = record.name_len == 0 ? [] : Array(UnsafeBufferPointer(start: record.name, count: Int(record.name_len)))
            events.append(InotifyEvent(wd: record.wd, mask: record.mask, cookie: record.cookie, name: name))
            offset = next
        }
    }
}
