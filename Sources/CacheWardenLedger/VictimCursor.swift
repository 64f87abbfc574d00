import HeapModule

/// A trim's way through a root's victims, oldest first, that leaves the victim heap as it is (`+Victims`): a trim
/// reads the ledger and never writes it — what it deletes it hands on (`PendingRemovals`) and the engine applies
/// once the trim is over — so the order is walked, not popped, and nothing taken out has to be put back. Victims
/// come in whole same-age groups, each ordered by path (the deterministic tie-break).
///
/// The walk keeps the heap's frontier: the smallest of the entries whose parents came out already, so k victims
/// cost O(k log k) reads however large the heap. When a trim asks for a fair share of the heap at once (an eighth
/// or more, of 64 or more), one sort of the heap's (age, record) pairs replaces the walk: a frontier step reads
/// records scattered through memory, the sort reads each once in the heap's order.
///
/// The heap must not change while a cursor walks it: a trim runs between two steps of the engine, and the ledger
/// is applied only after it (checked in debug builds).
package struct VictimCursor {
    package let root: RootID
    private var frontier = Heap<Entry>()
    private var sorted: [(record: RecordID, age: Int64)]?
    private var sortedIndex = 0
    private var started = false
    private var heapCount = 0

    package init(_ root: RootID) { self.root = root }

    /// At least `count` more victims (fewer if none is left), in whole same-age groups; `[]` when none is left.
    package mutating func next(atLeast count: Int, in ledger: SizeLedger) -> [(record: RecordID, age: Int64)] {
        let i = root.index
        guard i < ledger.heaps.count else { return [] }
        if !started {
            started = true
            heapCount = ledger.heaps[i].count
            if count > 1, heapCount >= 64, count >= heapCount / 8 {
                var keyed = ledger.heaps[i].map { (record: $0, age: ledger.victimAge($0)) }
                keyed.sort { SizeLedger.precedes($0.age, $0.record, $1.age, $1.record) }
                sorted = keyed
            } else if heapCount > 0 {
                frontier.insert(entry(at: 0, ledger))
            }
        }
        assert(ledger.heaps[i].count == heapCount, "the victim heap changed under a trim")
        var out: [(record: RecordID, age: Int64)] = []
        while out.count < count {
            let group = sorted == nil ? nextWalkedGroup(ledger) : nextSortedGroup()
            if group.isEmpty { break }
            out += group.count > 1 ? ledger.sortedByPath(group) : group
        }
        return out
    }

    private mutating func nextSortedGroup() -> [(record: RecordID, age: Int64)] {
        guard let sorted, sortedIndex < sorted.count else { return [] }
        let start = sortedIndex
        var stop = start + 1
        while stop < sorted.count && sorted[stop].age == sorted[start].age { stop += 1 }
        sortedIndex = stop
        return Array(sorted[start..<stop])
    }

    private mutating func nextWalkedGroup(_ ledger: SizeLedger) -> [(record: RecordID, age: Int64)] {
        var group: [(record: RecordID, age: Int64)] = []
        while let top = frontier.min, group.first.map({ $0.age == top.age }) ?? true {
            _ = frontier.removeMin()
            group.append((top.record, top.age))
            for child in (2 * top.index + 1)...(2 * top.index + 2) where child < heapCount {
                frontier.insert(entry(at: child, ledger))
            }
        }
        return group
    }

    private func entry(at index: Int, _ ledger: SizeLedger) -> Entry {
        let r = ledger.heaps[root.index][index]
        return Entry(age: ledger.victimAge(r), record: r, index: index)
    }

    /// A heap entry on the frontier, ordered as the heap orders it (older first, ties by record ID).
    private struct Entry: Comparable {
        let age: Int64
        let record: RecordID
        let index: Int

        static func < (a: Entry, b: Entry) -> Bool { SizeLedger.precedes(a.age, a.record, b.age, b.record) }
        static func == (a: Entry, b: Entry) -> Bool { a.index == b.index }
    }
}
