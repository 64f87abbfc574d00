import CInotify
import Glibc
import SystemPackage

/// The deletion witness's own inotify instance, for one trim: it watches each directory the trim deletes in for
/// the two changes that make a name stand for another file, `IN_CREATE` (a new file, a link, after a removal) and
/// `IN_MOVED_TO` (a rename over it). The trim's own deletions queue nothing here, so its queue stays empty — and a
/// check of it cheap — until a client changes such a name. A class so that the instance is closed however the trim
/// ends.
///
/// The check is an `epoll_wait` with a zero timeout on a set of its own holding the instance level-triggered, not
/// a `FIONREAD`. The client's call that queues a record also puts the instance on the set's ready list before it
/// returns (the wake-up of the queue's wait list, right after the record, runs epoll's callback). Both happen after
/// the name changed, so the instant between them lies inside the window every check leaves before the `unlinkat`
/// (see `DeletionWitness`). The check skips the `ioctl` path (security hooks, the queue's lock): in a C probe on
/// this machine 197 ns against 320 ns (a bare `getppid`: 220 ns), and it is made before every deletion of a trim.
final class InotifySentry {
    /// Watches one trim may add before the directories beyond are left to the `fstatat` re-check.
    static let maxDirectories = 1024
    static let mask: UInt32 = CINOTIFY_IN_CREATE | CINOTIFY_IN_MOVED_TO

    private let inotify: InotifyDescriptor
    /// The epoll set holding `inotify`, level-triggered.
    private let readiness: Int32
    private(set) var watches = 0

    init() throws(Errno) {
        // Both descriptors are made before either is stored: a throw after that would run `deinit` too.
        let inotify = try InotifyDescriptor()
        let readiness: Int32
        do throws(Errno) {
            readiness = try Syscall.retrying { cinotify_epoll_create() }
            do throws(Errno) { _ = try Syscall.retrying { cinotify_epoll_add_level(readiness, inotify.fd) } } catch {
                Syscall.close(readiness)
                throw error
            }
        } catch {
            inotify.close()
            throw error
        }
        self.inotify = inotify
        self.readiness = readiness
    }

    deinit {
        Syscall.close(readiness)
        inotify.close()
    }

    /// Starts watching the directory open as `fd`: the watch's number, or nil when the kernel refused or the trim
    /// has watched `maxDirectories` already.
    func watch(_ fd: Int32) -> Int32? {
        guard watches < Self.maxDirectories, let wd = try? inotify.addWatch(directory: fd, mask: Self.mask) else {
            return nil
        }
        watches += 1
        return wd
    }

    /// Reads out everything queued: the watches that saw a name created or renamed over (or went away), or nil
    /// when that cannot be known (records were lost, or the read failed). The sentry is quiet again afterwards
    /// until the next change.
    func takeChanges() -> Set<Int32>? {
        var changed: Set<Int32> = []
        var lost = false
        let read = inotify.readQueued { records in
            InotifyRecords.forEach(in: records) { r in
                if InotifyRecords.isOverflow(r) { lost = true } else { changed.insert(r.wd) }
            }
        }
        return read == nil || lost ? nil : changed
    }

    /// Whether no watched name was created or renamed over since the watches were added. A failed check (it
    /// cannot block; an interruption is the only plausible failure) counts as a change: the trim re-checks.
    var isQuiet: Bool { cinotify_epoll_ready_now(readiness) == 0 }
}
