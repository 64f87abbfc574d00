import Glibc

/// The oldest-first order trims take victims from: per `ordered` root, an indexed binary min-heap of record IDs
/// keyed by the inode's age (ties by record ID; a trim walks it with a `VictimCursor`, ties by path). Each record
/// knows its heap position, so an age change or a removal fixes the heap in O(log n) — no stale entries, no
/// compaction — and a heap costs 8 bytes a file. Only live, filed, statted records of ordered roots are in it; a
/// root without a policy that needs an order keeps none (`setOrdered`).
extension SizeLedger {
    /// The age a record is ordered by (its inode's).
    package func victimAge(_ r: RecordID) -> Int64 {
        let rec = records[r.index]
        if rec.linked, let age = accounts[rec.root.index].links[rec.ino]?.age { return age }
        return rec.age
    }

    /// Starts (building the heap in linear time) or stops keeping `root` in oldest-first order.
    package mutating func setOrdered(_ root: RootID, _ ordered: Bool) {
        guard let account = account(root), account.ordered != ordered else { return }
        accounts[root.index].ordered = ordered
        if ordered {
            rebuildHeap(root)
        } else {
            for r in heaps[root.index] { heapPositions[r.index] = Self.notInHeap }
            heaps[root.index] = []
        }
    }

    /// Puts `r` where it belongs: in the heap at its current age if it can be a victim, out of it otherwise.
    mutating func syncVictim(_ r: RecordID) {
        let rec = records[r.index]
        let position = r.index < heapPositions.count ? heapPositions[r.index] : Self.notInHeap
        let belongs =
            rec.live && rec.attached && rec.statted
            && accounts[rec.root.index].ordered == true && accounts[rec.root.index].bulkLoading == false
        if belongs {
            if position == Self.notInHeap { heapPush(r) } else { heapFix(rec.root.index, Int(position)) }
        } else if position != Self.notInHeap {
            heapRemove(rec.root.index, Int(position))
        }
    }

    /// Takes `r` out of the heap (if it is in), before a change of its key that `syncVictim` cannot fix alone.
    mutating func takeOutOfVictims(_ r: RecordID) {
        guard r.index < heapPositions.count, heapPositions[r.index] != Self.notInHeap else { return }
        heapRemove(records[r.index].root.index, Int(heapPositions[r.index]))
    }

    /// Coarse timestamps make large groups common (files written in the same jiffy): their paths are laid end to
    /// end in one buffer (each directory's path built once, the last one at hand without hashing: a group comes
    /// in runs from one directory) and the group sorted by slices of it (`memcmp`), with no allocation per file.
    func sortedByPath(_ group: [(record: RecordID, age: Int64)]) -> [(record: RecordID, age: Int64)] {
        var directoryPaths: [NodeID: [UInt8]] = [:]
        var last: (node: NodeID, path: [UInt8])?
        var bytes: [UInt8] = []
        var spans: [(start: Int, end: Int, entry: Int)] = []
        spans.reserveCapacity(group.count)
        for (k, entry) in group.enumerated() {
            let rec = records[entry.record.index]
            let start = bytes.count
            if last?.node != rec.dir {
                let path = directoryPaths[rec.dir] ?? relativePath(of: rec.dir)
                directoryPaths[rec.dir] = path
                last = (rec.dir, path)
            }
            if let directory = last?.path, !directory.isEmpty {
                bytes.append(contentsOf: directory)
                bytes.append(PathBytes.separator)
            }
            names.append(rec.name, to: &bytes)
            spans.append((start, bytes.count, k))
        }
        bytes.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress else { return }
            spans.sort { x, y in
                let lx = x.end - x.start, ly = y.end - y.start
                let c = memcmp(base + x.start, base + y.start, min(lx, ly))
                return c != 0 ? c < 0 : lx < ly
            }
        }
        return spans.map { group[$0.entry] }
    }

    /// The oldest age key in `root` (from the heap when ordered, else by a pass over the root).
    package func oldestAge(_ root: RootID) -> Int64? {
        guard let account = account(root) else { return nil }
        if account.ordered && !account.bulkLoading { return heaps[root.index].first.map { victimAge($0) } }
        var oldest: Int64?
        forEachRecord(under: account.rootNode) { r in
            if records[r.index].statted { oldest = min(oldest ?? .max, victimAge(r)) }
        }
        return oldest
    }

    /// The heap's record IDs (for tests).
    package func victims(_ root: RootID) -> [RecordID] { root.index < heaps.count ? heaps[root.index] : [] }

    // MARK: Heap

    /// Rebuilds a root's heap from its records (Floyd's heapify, linear). Each record's age is read once, into an
    /// array beside the IDs, and the heapify moves both: the sift then compares integers in two arrays, where
    /// loading the age from the record at every comparison (and writing a position at every move) missed the cache
    /// on most of them. The positions are written once, at the end. (After an initial scan nothing else runs
    /// meanwhile: at 1M files `perf` put the build at 57 ms that way, 14.5 ms this way; docs/performance.md.)
    mutating func rebuildHeap(_ root: RootID) {
        guard let account = account(root) else { return }
        let i = root.index
        for r in heaps[i] { heapPositions[r.index] = Self.notInHeap }
        var items: [RecordID] = []
        var ages: [Int64] = []
        items.reserveCapacity(account.names)
        ages.reserveCapacity(account.names)
        for k in records.indices {
            let rec = records[k]
            if rec.rootIndex == UInt16(root.raw) && rec.live && rec.attached && rec.statted {
                let r = RecordID(UInt32(k))
                items.append(r)
                ages.append(victimAge(r))
            }
        }
        Self.heapify(&items, ages: &ages)
        ensurePositions(records.count)
        for (k, r) in items.enumerated() { heapPositions[r.index] = UInt32(k) }
        heaps[i] = items
    }

    /// Floyd's heapify of `items`, each keyed by the age at the same index of `ages` (the two move together):
    /// afterwards no item precedes its parent (`precedes`: older first, ties by record ID).
    static func heapify(_ items: inout [RecordID], ages: inout [Int64]) {
        precondition(items.count == ages.count)
        let count = items.count
        items.withUnsafeMutableBufferPointer { item in
            ages.withUnsafeMutableBufferPointer { age in
                var start = count / 2 - 1
                while start >= 0 {
                    var k = start
                    let (r, a) = (item[k], age[k])
                    while true {
                        var child = 2 * k + 1
                        guard child < count else { break }
                        if child + 1 < count, precedes(age[child + 1], item[child + 1], age[child], item[child]) {
                            child += 1
                        }
                        guard precedes(age[child], item[child], a, r) else { break }
                        (item[k], age[k]) = (item[child], age[child])
                        k = child
                    }
                    (item[k], age[k]) = (r, a)
                    start -= 1
                }
            }
        }
    }

    private func before(_ a: RecordID, _ b: RecordID) -> Bool {
        Self.precedes(victimAge(a), a, victimAge(b), b)
    }

    /// The heap order: older first, ties by record ID.
    static func precedes(_ x: Int64, _ a: RecordID, _ y: Int64, _ b: RecordID) -> Bool {
        x != y ? x < y : a.raw < b.raw
    }

    private mutating func ensurePositions(_ count: Int) {
        if heapPositions.count < count {
            heapPositions.append(
                contentsOf: repeatElement(
                    Self.notInHeap, count: max(count, heapPositions.count * 2) - heapPositions.count))
        }
    }

    private mutating func place(_ i: Int, _ k: Int, _ r: RecordID) {
        heaps[i][k] = r
        heapPositions[r.index] = UInt32(k)
    }

    private mutating func heapPush(_ r: RecordID) {
        let i = records[r.index].root.index
        ensurePositions(r.index + 1)
        heaps[i].append(r)
        heapPositions[r.index] = UInt32(heaps[i].count - 1)
        siftUp(i, heaps[i].count - 1)
    }

    private mutating func heapRemove(_ i: Int, _ k: Int) {
        let r = heaps[i][k]
        heapPositions[r.index] = Self.notInHeap
        let last = heaps[i].removeLast()
        guard k < heaps[i].count else { return }
        place(i, k, last)
        heapFix(i, k)
    }

    private mutating func heapFix(_ i: Int, _ k: Int) {
        if k > 0 && before(heaps[i][k], heaps[i][(k - 1) / 2]) { siftUp(i, k) } else { siftDown(i, k) }
    }

    // The sifts take the root's heap out of `heaps`, and the positions out of the ledger, while they work (so each
    // write is to a local, uniquely held array: no uniqueness check of a stored one per level), and compute the
    // moving record's age once, not at every level.

    private mutating func lendHeap(_ i: Int) -> (heap: [RecordID], positions: [UInt32]) {
        defer {
            heaps[i] = []
            heapPositions = []
        }
        return (heaps[i], heapPositions)
    }

    private mutating func returnHeap(_ i: Int, _ heap: [RecordID], _ positions: [UInt32]) {
        heaps[i] = heap
        heapPositions = positions
    }

    private mutating func siftUp(_ i: Int, _ start: Int) {
        var (heap, positions) = lendHeap(i)
        defer { returnHeap(i, heap, positions) }
        var k = start
        let r = heap[k]
        let age = victimAge(r)
        while k > 0 {
            let parent = (k - 1) / 2
            let p = heap[parent]
            guard Self.precedes(age, r, victimAge(p), p) else { break }
            heap[k] = p
            positions[p.index] = UInt32(k)
            k = parent
        }
        heap[k] = r
        positions[r.index] = UInt32(k)
    }

    private mutating func siftDown(_ i: Int, _ start: Int) {
        var (heap, positions) = lendHeap(i)
        defer { returnHeap(i, heap, positions) }
        var k = start
        let r = heap[k]
        let age = victimAge(r)
        let count = heap.count
        while true {
            var child = 2 * k + 1
            guard child < count else { break }
            var c = heap[child]
            var childAge = victimAge(c)
            if child + 1 < count {
                let d = heap[child + 1]
                let dAge = victimAge(d)
                if Self.precedes(dAge, d, childAge, c) { (child, c, childAge) = (child + 1, d, dAge) }
            }
            guard Self.precedes(childAge, c, age, r) else { break }
            heap[k] = c
            positions[c.index] = UInt32(k)
            k = child
        }
        heap[k] = r
        positions[r.index] = UInt32(k)
    }
}
