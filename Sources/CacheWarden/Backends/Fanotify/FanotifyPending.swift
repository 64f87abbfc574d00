import Synchronization

/// The directory keys the walkers computed (on their threads) and the engine's queue has not adopted yet, by
/// handle, with whether the directory's root tracks opens.
final class FanotifyPending: Sendable {
    private let table = Mutex<(next: UInt64, keys: [UInt64: (key: DirectoryKey, opens: Bool)])>((0, [:]))

    func add(_ key: DirectoryKey, opens: Bool) -> WatchHandle {
        table.withLock { t in
            t.next += 1
            t.keys[t.next] = (key, opens)
            return WatchHandle(raw: t.next, backend: .fanotify)
        }
    }

    func take(_ handle: WatchHandle) -> (key: DirectoryKey, opens: Bool)? {
        table.withLock { $0.keys.removeValue(forKey: handle.raw) }
    }

    func removeAll() { table.withLock { $0.keys.removeAll() } }
}
