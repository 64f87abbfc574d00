import CWardenShims
import CacheWardenFilesystem
import SystemPackage

/// An epoll set holding a backend's notification descriptors (inotify's, fanotify's), which a one-shot
/// `DispatchSourceRead` watches, so that the kernel wakes a reader once per batch instead of once per event.
///
/// Why: a `DispatchSourceRead` on an inotify descriptor keeps it armed in libdispatch's epoll, and every record the
/// kernel queues then runs the wake-up chain (inotify's wait queue → epoll callback → waking the dispatch thread)
/// in the context of whoever made the change. Suspending the source does not take it out. A watched `unlinkat`
/// costs much more with a thread waiting in `epoll_wait` on the queue than with the queue unread (figures in
/// docs/performance.md, Notes), a large share of a trim's `unlinkat` time, and a writer under the watcher pays
/// the same on each of its own records. Here each descriptor is in the set level-triggered, and the read source
/// on this set's descriptor is one-shot in libdispatch's epoll (libdispatch disarms it when it fires and arms it
/// again once the handler has returned): the first record wakes the handler, the records queued while it reads and
/// processes its batch wake nobody (their callback stops at the disarmed source), and re-arming polls the set, so
/// a record queued in between is never missed. No `epoll_ctl` of this set per batch.
///
/// While a trim deletes, or reading rests (`ReadPacing`), the backend disarms the set: disarmed means out of the
/// set (`EPOLL_CTL_DEL`), not registered with no events: a registered entry stays on the inotify queue's wait
/// list, and every record still runs epoll's callback (a lock taken with interrupts off, in the deleting thread)
/// only to find it disarmed, still visible in a trim's `unlinkat` time. Arming adds it back (`EPOLL_CTL_ADD`
/// polls it at once).
struct ReadinessSet: Sendable {
    /// Closes the set when the last copy of this value (the backend's, its read source's) is gone.
    private let owner: OwnedDescriptor
    var fd: FileDescriptor { owner.fd }
    /// Each descriptor, and whether it is in the set (armed, or fired and not yet disarmed).
    private var members: [(descriptor: FileDescriptor, inSet: Bool)] = []

    init() throws(Errno) {
        owner = try OwnedDescriptor.opening { cwsys_epoll_create() }
    }

    /// Adds `descriptor`, armed.
    mutating func add(_ descriptor: FileDescriptor) throws(Errno) {
        _ = try Syscall.retrying { cwsys_epoll_add(fd.rawValue, descriptor.rawValue) }
        members.append((descriptor, true))
    }

    /// Takes `descriptor` out (before it is closed).
    mutating func remove(_ descriptor: FileDescriptor) {
        guard let i = members.firstIndex(where: { $0.descriptor == descriptor }) else { return }
        if members[i].inSet { unregister(descriptor) }
        members.remove(at: i)
    }

    /// Arms every descriptor again: a descriptor with records queued makes the set readable at once.
    mutating func arm() {
        for i in members.indices where !members[i].inSet {
            // Fails only for a bad descriptor or without memory; the descriptor then stays unread until the next
            // arm, as before the set existed a failed registration would have left it.
            members[i].inSet =
                (try? Syscall.retrying { cwsys_epoll_add(fd.rawValue, members[i].descriptor.rawValue) }) != nil
        }
    }

    /// Disarms every descriptor: its records queue without waking anyone (or running any callback) until `arm()`.
    mutating func disarm() {
        for i in members.indices where members[i].inSet {
            unregister(members[i].descriptor)
            members[i].inSet = false
        }
    }

    /// Whether `descriptor` is in the set now (for tests).
    func isArmed(_ descriptor: FileDescriptor) -> Bool { members.contains { $0.descriptor == descriptor && $0.inSet } }

    private func unregister(_ descriptor: FileDescriptor) {
        _ = try? Syscall.retrying { cwsys_epoll_remove(fd.rawValue, descriptor.rawValue) }
    }
}
