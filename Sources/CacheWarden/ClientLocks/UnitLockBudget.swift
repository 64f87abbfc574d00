/// The descriptors the locks of units may hold at once, one budget for the whole process (the engine's
/// `LockFileRegistry.unitBudget`), shared by every root's `UnitClientLocks`: a group trim or a low-disk purge keeps
/// each member's trim, and its units' locks, alive at once, and a budget per root would let several roots together
/// exhaust the process's descriptors.
///
/// What is counted is what a unit's `HeldClientLocks` holds open: each lock file (one shared with another taker is
/// counted by each, so the count is never less than the truth) and each folder the locks are in. When more are held
/// than `limit`, the least recently used units of any root are let go (taken again if needed), never a pinned one:
/// the unit being deleted whole, between `beginUnit` and `endUnit`.
final class UnitLockBudget {
    private struct Entry {
        weak var owner: UnitClientLocks?
        let id: ObjectIdentifier
        let unit: [UInt8]
        let count: Int
    }

    let limit: Int
    private(set) var inUse = 0
    /// Units holding descriptors, least recently used first.
    private var recent: [Entry] = []

    init(limit: Int) { self.limit = limit }

    /// A quarter of the soft open-file limit (`RLIMIT_NOFILE`), from 16 to 16,384: the rest is the watcher's, the
    /// control socket's and its clients'. `cachewarden run` and `clear` raise the soft limit to the hard one at start.
    static func defaultLimit() -> Int {
        guard let soft = OpenFileLimit.soft() else { return 256 }
        return min(16_384, max(16, Int(clamping: soft) / 4))
    }

    /// `owner` now holds `count` descriptors for `unit`, used last.
    func charge(_ owner: UnitClientLocks, _ unit: [UInt8], _ count: Int) {
        recent.append(Entry(owner: owner, id: ObjectIdentifier(owner), unit: unit, count: count))
        inUse += count
    }

    /// `owner`'s `unit` was used now: the last to be let go.
    func touch(_ owner: UnitClientLocks, _ unit: [UInt8]) {
        guard let i = index(ObjectIdentifier(owner), unit) else { return }
        recent.append(recent.remove(at: i))
    }

    /// `owner` let go of `unit`'s descriptors.
    func refund(_ id: ObjectIdentifier, _ unit: [UInt8]) {
        guard let i = index(id, unit) else { return }
        inUse -= recent.remove(at: i).count
    }

    /// Lets go of the least recently used units until at most `limit` descriptors are held, sparing the pinned units
    /// and `owner`'s `unit` (the one just taken); false: those alone are more than the limit.
    func makeRoom(for owner: UnitClientLocks, _ unit: [UInt8]) -> Bool {
        let id = ObjectIdentifier(owner)
        var i = 0
        while inUse > limit, i < recent.count {
            let e = recent[i]
            guard let o = e.owner, !(e.id == id && e.unit == unit), !o.isPinned(e.unit) else { i += 1; continue }
            o.letGo(e.unit) // refunds it: the entry at `i` is the next one now
        }
        return inUse <= limit
    }

    private func index(_ id: ObjectIdentifier, _ unit: [UInt8]) -> Int? {
        recent.firstIndex { $0.id == id && $0.unit == unit }
    }
}
