import CInotify
import SystemPackage

/// An epoll set holding the backend's inotify descriptors one-shot, so that the kernel wakes a reader once per
/// batch instead of once per record.
///
/// Why: a `DispatchSourceRead` on an inotify descriptor keeps it armed in libdispatch's epoll, and every record the
/// kernel queues then runs the wake-up chain (inotify's wait queue → epoll callback → waking the dispatch thread)
/// in the context of whoever made the change. Suspending the source does not take it out. Measured on tmpfs, a
/// watched `unlinkat` of a 4 KiB file cost 5.8 µs with the queue unread and 8–9.8 µs with a thread waiting in
/// `epoll_wait` on it; that wake-up was 30 % of a trim's `unlinkat` time in `perf`, and a writer under the watcher
/// pays the same on each of its own records. Here each descriptor is registered `EPOLLONESHOT`: the first record
/// after arming wakes the dispatch source (which watches this set's descriptor), `consume()` disarms it, and
/// nothing is woken again until the backend has read and processed its batch and calls `arm()` — while a trim
/// deletes, its `IN_DELETE` records only queue. Re-arming polls the descriptor again, so a record queued in
/// between is never missed.
struct InotifyReadiness: Sendable {
    let fd: Int32
    private var members: [Int32] = []

    init() throws(Errno) {
        fd = try Syscall.retrying { cinotify_epoll_create() }
    }

    /// Adds `descriptor`, armed.
    mutating func add(_ descriptor: Int32) throws(Errno) {
        _ = try Syscall.retrying { cinotify_epoll_control(fd, CINOTIFY_EPOLL_CTL_ADD, descriptor, 1) }
        members.append(descriptor)
    }

    /// Takes `descriptor` out (before it is closed).
    mutating func remove(_ descriptor: Int32) {
        guard let i = members.firstIndex(of: descriptor) else { return }
        members.remove(at: i)
        _ = try? Syscall.retrying { cinotify_epoll_control(fd, CINOTIFY_EPOLL_CTL_DEL, descriptor, 0) }
    }

    /// Arms every descriptor again: a descriptor with records queued makes the set readable at once.
    func arm() { control(armed: true) }

    /// Disarms every descriptor: its records queue without waking anyone until `arm()`.
    func disarm() { control(armed: false) }

    /// Takes the set's readiness (disarming what was ready), so the dispatch source does not fire again for it.
    func consume() { _ = cinotify_epoll_consume(fd) }

    func close() { Syscall.close(fd) }

    private func control(armed: Bool) {
        for descriptor in members {
            _ = try? Syscall.retrying { cinotify_epoll_control(fd, CINOTIFY_EPOLL_CTL_MOD, descriptor, armed ? 1 : 0) }
        }
    }
}
