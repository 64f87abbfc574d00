/// A set of 4-byte entries found by a hash the caller computes: open addressing with linear probing. The ledger
/// files each directory's records and subdirectories in one (by name) and, where hard links need it, a root's
/// records by inode.
///
/// Written by hand rather than with `Dictionary<[UInt8], RecordID>` because the keys are already stored once, in
/// the ledger (names in the `NameArena`, inodes in the records): a slot holds only the entry's number, and a
/// lookup compares the probed entry's stored key with the one asked for. That is ~5 bytes a file where a
/// dictionary keyed by an owned name costs ~40 plus the name's own allocation. The table knows no keys itself:
/// callers pass the hash of the key they look for and a `matches` test, and, when the table grows, the hash of
/// each entry. Tested against `Dictionary` in `EntryTableTests`.
package struct EntryTable: Sendable {
    /// 0: never used; `tombstone`: deleted; otherwise the entry + 1.
    private var slots: [UInt32] = []
    package private(set) var count = 0
    private var tombstones = 0

    private static let tombstone = UInt32.max

    package init() {}

    package var isEmpty: Bool { count == 0 }
    /// Slots allocated (for memory accounting).
    package var capacity: Int { slots.count }

    /// The first slot to probe for `hash`. Capacities are not powers of two (a table is sized to its entries, at
    /// most 3/4 full, not to the next power of two: that halves a directory's table), so the slot comes from a
    /// multiply-shift of the hash's low 32 bits rather than a mask.
    @inline(__always)
    private func home(_ hash: Int) -> Int {
        Int((UInt64(UInt32(truncatingIfNeeded: hash)) &* UInt64(slots.count)) >> 32)
    }

    /// The entry whose key `matches`, probing from `hash`.
    package func find(hash: Int, matches: (UInt32) -> Bool) -> UInt32? {
        guard !slots.isEmpty else { return nil }
        var i = home(hash)
        while true {
            let slot = slots[i]
            if slot == 0 { return nil }
            if slot != Self.tombstone, matches(slot - 1) { return slot - 1 }
            i += 1
            if i == slots.count { i = 0 }
        }
    }

    /// Whether inserting one more entry needs `grow(hashOf:)` first.
    package var needsGrowth: Bool { (count + tombstones + 1) * 4 > slots.count * 3 }

    /// Adds `entry` (not present yet) under `hash`. Call `grow(hashOf:)` first when `needsGrowth`.
    package mutating func insert(_ entry: UInt32, hash: Int) {
        precondition(entry < Self.tombstone - 1 && !needsGrowth)
        var i = home(hash)
        while slots[i] != 0 && slots[i] != Self.tombstone {
            i += 1
            if i == slots.count { i = 0 }
        }
        if slots[i] == Self.tombstone { tombstones -= 1 }
        slots[i] = entry + 1
        count += 1
    }

    /// Removes `entry`, filed under `hash`. Returns whether it was there.
    @discardableResult
    package mutating func remove(_ entry: UInt32, hash: Int) -> Bool {
        guard !slots.isEmpty else { return false }
        var i = home(hash)
        while slots[i] != 0 {
            if slots[i] == entry + 1 {
                // A slot followed by a never-used one can become never-used too: probes stop there anyway.
                let next = i + 1 == slots.count ? 0 : i + 1
                if slots[next] == 0 { slots[i] = 0 } else { slots[i] = Self.tombstone; tombstones += 1 }
                count -= 1
                if count == 0 { slots = []; tombstones = 0 }
                return true
            }
            i += 1
            if i == slots.count { i = 0 }
        }
        return false
    }

    /// Rehashes into a table with room for `count + extra` entries at most 3/4 full, dropping tombstones. When
    /// the live entries need room, it grows by half again (amortised O(1) per insert); when only tombstones
    /// filled it, it keeps its size. Never smaller than 4 slots.
    package mutating func grow(reserving extra: Int = 1, hashOf: (UInt32) -> Int) {
        let needed = (count + extra) * 4 / 3 + 1
        let crowded = (count + extra) * 4 > slots.count * 3
        let capacity = max(4, needed, crowded && extra == 1 ? slots.count + slots.count / 2 : slots.count)
        let old = slots
        slots = [UInt32](repeating: 0, count: capacity)
        tombstones = 0
        count = 0
        for slot in old where slot != 0 && slot != Self.tombstone {
            insert(slot - 1, hash: hashOf(slot - 1))
        }
    }

    /// Every entry, in slot order.
    package func forEach(_ body: (UInt32) -> Void) {
        for slot in slots where slot != 0 && slot != Self.tombstone { body(slot - 1) }
    }

    /// Every entry, in slot order.
    package var entries: [UInt32] {
        var out: [UInt32] = []
        out.reserveCapacity(count)
        forEach { out.append($0) }
        return out
    }
}
