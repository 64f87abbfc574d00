import CacheWardenFilesystem
import Glibc
import SystemPackage

/// The lock files this process holds, each by its device, inode and kind, through one descriptor, with a count of
/// its takers. A lock is held per open file description, so a second open of a file already held here and a lock
/// on it would conflict with this very process: two roots naming one file (cargo's registry and git, both
/// `../.package-cache`), or a root's lock and a unit's, share the one lock instead. The engine keeps one registry
/// (`ClientLockTable.files`) for every take, and with it the one budget of units' descriptors; the last release drops
/// the descriptor's owner, which closes it and so releases the lock.
final class LockFileRegistry {
    struct Key: Hashable {
        let file: FileIdentity
        let kind: ClientLock.Kind
    }

    /// A file's device and inode.
    struct FileIdentity: Hashable {
        let dev: UInt64
        let ino: UInt64
        init(_ st: stat) {
            dev = UInt64(st.st_dev)
            ino = UInt64(st.st_ino)
        }
    }

    private var held: [Key: (file: OwnedDescriptor, takers: Int)] = [:]
    /// The descriptors units' locks may hold, one budget for every root of the process.
    let unitBudget: UnitLockBudget

    init(unitBudget limit: Int = UnitLockBudget.defaultLimit()) { unitBudget = UnitLockBudget(limit: limit) }

    /// Whether `key` is held here; if so, one more taker holds it.
    func retain(_ key: Key) -> Bool {
        guard let h = held[key] else { return false }
        held[key] = (h.file, h.takers + 1)
        return true
    }

    /// `file`, locked, now holds `key` for one taker.
    func add(_ key: Key, file: OwnedDescriptor) { held[key] = (file, 1) }

    /// One taker lets `key` go; the last closes its descriptor (the lock is released).
    func release(_ key: Key) {
        guard let h = held[key] else { return }
        if h.takers > 1 { held[key] = (h.file, h.takers - 1); return }
        held[key] = nil
    }

    /// Files held now (for tests and `status`).
    var count: Int { held.count }
}
