import CWardenShims
import Glibc

/// The kernel's cost of a watched unlink, the floor a trim's per-file cost is compared with: `count` files of
/// `size` bytes in a folder watched by an inotify instance that nobody reads (so its records only queue), removed
/// by a plain `unlinkat` loop on the folder's descriptor. Nothing else: no stat, no check, no event line.
///
/// `trashPath`: the floor of a trim's own path instead, the system calls it cannot drop — each file renamed
/// (`RENAME_NOREPLACE`) into a folder at the top of the watched root, `fstatat` there (the re-check of what was
/// moved), then unlinked there. No lookup of its folder, no event line.
enum UnlinkFloor {
    /// Microseconds per file; nil when the folder or the watch cannot be made.
    static func microsecondsPerFile(count: Int, size: Int, work: String, trashPath: Bool = false) -> Double? {
        let root = "\(work)/unlink-floor"
        guard (try? Files.makeDirectory(root)) != nil else { return nil }
        defer { Files.discard(root) }
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else { return nil }
        defer { close(inotify) }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB)
        guard inotify_add_watch(inotify, root, mask) >= 0 else { return nil }
        let stream = FileStream(root: root, size: size, fanOut: count + 1)
        for _ in 0..<count { stream.writeOne() }
        let dir = open("\(root)/w0", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { return nil }
        defer { close(dir) }
        guard inotify_add_watch(inotify, "\(root)/w0", mask) >= 0 else { return nil }
        let names = (0..<count).map { "f\($0).bin" }
        guard trashPath else {
            let start = Clock.nanos()
            for name in names { unlinkat(dir, name, 0) }
            return Clock.seconds(since: start) * 1e6 / Double(count)
        }
        guard mkdir("\(root)/trash", 0o700) == 0 else { return nil }
        let trash = open("\(root)/trash", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard trash >= 0 else { return nil }
        defer { close(trash) }
        let moved = (0..<count).map { "t\($0)" }
        var st = stat()
        let start = Clock.nanos()
        for (name, to) in zip(names, moved) {
            _ = cwsys_rename_noreplace(dir, name, trash, to)
            fstatat(trash, to, &st, AT_SYMLINK_NOFOLLOW)
            unlinkat(trash, to, 0)
        }
        return Clock.seconds(since: start) * 1e6 / Double(count)
    }
}
