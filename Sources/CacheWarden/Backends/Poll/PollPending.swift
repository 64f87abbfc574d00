import Synchronization

/// Snapshots the walkers took (on their threads) and the engine's queue has not adopted yet, by handle. A
/// polling handle has its top bit set, which the kernel-watch backend's handles never have (see `RoutingBackend`):
/// that is how the router tells them apart.
final class PollPending: Sendable {
    static let tag: UInt64 = 1 << 63
    private let table = Mutex<(next: UInt64, snapshots: [UInt64: PollSnapshot])>((0, [:]))

    func add(_ snapshot: PollSnapshot) -> WatchHandle {
        table.withLock { t in
            t.next += 1
            t.snapshots[t.next] = snapshot
            return WatchHandle(raw: t.next | Self.tag)
        }
    }

    func take(_ handle: WatchHandle) -> PollSnapshot? {
        table.withLock { $0.snapshots.removeValue(forKey: handle.raw & ~Self.tag) }
    }

    /// Drops what was never adopted (a walk that stopped early): called between scans, when none is pending.
    func removeAll() { table.withLock { $0.snapshots.removeAll() } }

    static func isPolling(_ handle: WatchHandle) -> Bool { handle.raw & tag != 0 }
}
