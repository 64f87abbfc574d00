import Testing
@testable import CacheWardenLedger

/// The hand-written open-addressing table, checked against the standard library's `Set` (the reference).
@Suite struct EntryTableTests {
    /// Keys are small strings; entries are their indices in `keys`, found by hash and comparison.
    @Test func randomInsertsAndRemovesMatchASet() {
        var g = ModelBasedTotalsTests.Generator(state: 7)
        let keys = (0..<3000).map { "name-\($0)-\($0 % 7)" }
        func hash(_ k: String) -> Int { Array(k.utf8).withUnsafeBytes { NameArena.hash($0) } }
        var table = EntryTable()
        var reference = Set<UInt32>()
        for step in 0..<60_000 {
            let e = UInt32(g.below(keys.count))
            if g.below(3) == 0 {
                let removed = table.remove(e, hash: hash(keys[Int(e)]))
                #expect(removed == (reference.remove(e) != nil))
            } else if !reference.contains(e) {
                if table.needsGrowth { table.grow { hash(keys[Int($0)]) } }
                table.insert(e, hash: hash(keys[Int(e)]))
                reference.insert(e)
            }
            if step % 1000 == 0 || step < 50 {
                #expect(table.count == reference.count)
                #expect(Set(table.entries) == reference)
                for probe in 0..<50 {
                    let k = keys[(probe * 61 + step) % keys.count]
                    let found = table.find(hash: hash(k)) { keys[Int($0)] == k }
                    #expect(
                        found.map { keys[Int($0)] }
                            == (reference.contains(UInt32((probe * 61 + step) % keys.count)) ? k : nil))
                }
            }
        }
    }

    @Test func collidingHashesStillFindEveryEntry() {
        var table = EntryTable()
        for e in UInt32(0)..<500 {
            if table.needsGrowth { table.grow { _ in 42 } }
            table.insert(e, hash: 42) // every entry on one probe chain
        }
        for e in UInt32(0)..<500 where e % 3 == 0 {
            let removed = table.remove(e, hash: 42)
            #expect(removed)
        }
        for e in UInt32(0)..<500 {
            #expect((table.find(hash: 42) { $0 == e } != nil) == (e % 3 != 0))
        }
        #expect(table.count == 333)
    }
}

/// The ledger's per-file footprint, which the 64-bytes-a-file target rests on.
@Suite struct LedgerLayoutTests {
    @Test func aFileRecordIs32BytesWithoutPadding() {
        #expect(MemoryLayout<FileRecord>.size == 32)
        #expect(MemoryLayout<FileRecord>.stride == 32)
        #expect(MemoryLayout<NodeID>.size == 4 && MemoryLayout<RecordID>.size == 4)
    }
}
