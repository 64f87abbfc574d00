import Testing
@testable import CacheWardenLedger

/// `SizeLedger.heapify` — the linear build of a root's victim heap from IDs and ages gathered once — against its
/// definition: the result is a permutation of what went in, each ID still beside its own age, and no entry
/// precedes its parent (older first, ties by record ID). Ages from a narrow range, so that ties are common, as
/// coarse timestamps make them.
@Suite struct HeapifyTests {
    @Test(arguments: [0, 1, 2, 3, 4, 7, 100, 1001])
    func heapifyGivesAHeapOfTheSameEntries(count: Int) {
        for seed in UInt64(1)...8 {
            var rng = ModelBasedTotalsTests.Generator(state: seed)
            var ids = (0..<count).map { RecordID(UInt32($0 * 3 + rng.below(3))) }
            for k in ids.indices.reversed() { ids.swapAt(k, rng.below(k + 1)) }
            var items = ids
            var ages = ids.map { Int64($0.raw % 5) * 1_000 + Int64(rng.below(count % 2 == 0 ? 3 : 20)) }
            let before = Dictionary(uniqueKeysWithValues: zip(items.map(\.raw), ages))
            SizeLedger.heapify(&items, ages: &ages)
            #expect(items.count == count && ages.count == count, "seed \(seed)")
            #expect(Set(items.map(\.raw)) == Set(ids.map(\.raw)), "seed \(seed): the same entries")
            for (k, r) in items.enumerated() {
                #expect(before[r.raw] == ages[k], "seed \(seed): \(r) kept its age")
                guard k > 0 else { continue }
                let parent = (k - 1) / 2
                #expect(
                    ages[parent] < ages[k] || (ages[parent] == ages[k] && items[parent].raw < r.raw),
                    "seed \(seed): entry \(k) is older than its parent, or as old with a lower ID")
            }
            if let first = items.first {
                let oldest = zip(items, ages).min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0.raw < $1.0.raw }!
                #expect(first == oldest.0, "seed \(seed): the top is the oldest, lowest ID among ties")
            }
        }
    }
}
