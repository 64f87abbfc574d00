import CWardenShims
import SystemPackage

/// An epoll set holding a backend's notification descriptors (inotify's, fanotify's) one-shot, so that the kernel
/// wakes a reader once per batch instead of once per event.
///
/// Why: a `DispatchSourceRead` on an inotify descriptor keeps it armed in libdispatch's epoll, and every record the
/// kernel queues then runs the wake-up chain (inotify's wait queue → epoll callback → waking the dispatch thread)
/// in the context of whoever made the change. Suspending the source does not take it out. A watched `unlinkat`
/// costs much more with a thread waiting in `epoll_wait` on the queue than with the queue unread (figures in
/// docs/performance.md, Notes), a large share of a trim's `unlinkat` time, and a writer under the watcher pays
/// the same on each of its own records. Here each descriptor is registered `EPOLLONESHOT`: the first record
/// after arming wakes the dispatch source (which watches this set's descriptor), the backend disarms it, and
/// nothing is woken again until the backend has read and processed its batch and calls `arm()` — while a trim
/// deletes, its `IN_DELETE` records only queue. Re-arming polls the descriptor again, so a record queued in
/// between is never missed.
///
/// Disarmed means out of the set (`EPOLL_CTL_DEL`), not registered with no events: a registered entry stays on the
/// inotify queue's wait list, and every record still runs epoll's callback (a lock taken with interrupts off, in
/// the deleting thread) only to find it disarmed, still visible in a trim's `unlinkat` time. Arming adds it back
/// (`EPOLL_CTL_ADD` polls it at once, as a re-arm does).
struct OneShotReadiness: Sendable {
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
