import CInotify
import Glibc
import SystemPackage

/// The deletion witness's own inotify instance, for one trim: it watches each directory the trim deletes in for
/// the two changes that make a name stand for another file, `IN_CREATE` (a new file, a link, after a removal) and
/// `IN_MOVED_TO` (a rename over it). The trim's own deletions queue nothing here, so its queue stays empty — and a
/// `FIONREAD` on it as cheap as a syscall gets — until a client changes such a name. A class so that the instance
/// is closed however the trim ends.
final class InotifySentry {
    /// Watches one trim may add before the directories beyond are left to the `fstatat` re-check.
    static let maxDirectories = 1024
    static let mask: UInt32 = CINOTIFY_IN_CREATE | CINOTIFY_IN_MOVED_TO

    private let inotify: InotifyDescriptor
    private(set) var watches = 0

    init() throws(Errno) { inotify = try InotifyDescriptor() }

    deinit { inotify.close() }

    /// Starts watching the directory open as `fd`; false when the kernel refused or the trim has watched
    /// `maxDirectories` already.
    func watch(_ fd: Int32) -> Bool {
        guard watches < Self.maxDirectories, (try? inotify.addWatch(directory: fd, mask: Self.mask)) != nil else {
            return false
        }
        watches += 1
        return true
    }

    /// Whether no watched name was created or renamed over since the watches were added.
    var isQuiet: Bool { inotify.pendingBytes() == 0 }
}
