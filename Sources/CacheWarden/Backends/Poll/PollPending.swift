import Synchronization

/// Snapshots the walkers took (on their threads) and the engine's queue has not adopted yet, by handle.
final class PollPending: Sendable {
    private let table = Mutex<(next: UInt64, snapshots: [UInt64: PollSnapshot])>((0, [:]))

    func add(_ snapshot: PollSnapshot) -> WatchHandle {
        table.withLock { t in
            t.next += 1
            t.snapshots[t.next] = snapshot
            return WatchHandle(raw: t.next, backend: .poll)
        }
    }

    func take(_ handle: WatchHandle) -> PollSnapshot? {
        table.withLock { $0.snapshots.removeValue(forKey: handle.raw) }
    }

    /// Drops what was never adopted (a walk that stopped early): called between scans, when none is pending.
    func removeAll() { table.withLock { $0.snapshots.removeAll() } }
}
