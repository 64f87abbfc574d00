import Testing
@testable import CacheWardenLedger

/// `popOldest(_:atLeast:)` — the one sort a trim does instead of a heap pop per victim — against the reference it
/// replaces: `popOldestGroup` called until as many victims came out.
@Suite struct VictimBulkPopTests {
    /// A ledger of `files` names in 9 directories, ages from a narrow range (many ties, as coarse timestamps
    /// give), every seventh name a hard link sharing an inode (and so an age) with the name before it.
    static func ledger(files: Int, seed: UInt64) -> (SizeLedger, RootID) {
        var rng = ModelBasedTotalsTests.Generator(state: seed)
        var l = SizeLedger()
        let root = RootID(0)
        let top = l.addRoot(root, path: Array("/c".utf8), ino: 1, dev: 1, ordered: true)
        let dirs = (0..<9).map { d in
            Array("d\(d)".utf8).withUnsafeBytes { l.addDirectory(parent: top, name: $0, ino: UInt64(100 + d)).node }
        }
        var ino: UInt64 = 1000
        for k in 0..<files {
            let dir = dirs[rng.below(dirs.count)]
            let r = Array("f\(k)".utf8).withUnsafeBytes { l.record(in: dir, named: $0).record }
            let linked = k % 7 == 6
            if !linked { ino += 1 }
            _ = l.apply(
                FileStatus(ino: ino, bytes: 4096, age: Int64(rng.below(40)), links: linked ? 2 : 1), to: r,
                keepOpenedAge: false)
        }
        return (l, root)
    }

    static func popGroups(_ l: inout SizeLedger, _ root: RootID, atLeast count: Int) -> [RecordID] {
        var out: [RecordID] = []
        while out.count < count, case let group = l.popOldestGroup(root), !group.isEmpty { out += group.map(\.record) }
        return out
    }

    @Test(arguments: [1, 2, 40, 150, 299, 300, 1000])
    func aBulkPopGivesWhatSuccessiveGroupPopsGive(count: Int) {
        for seed in UInt64(1)...6 {
            var (bulk, root) = Self.ledger(files: 300, seed: seed)
            var (groups, _) = Self.ledger(files: 300, seed: seed)
            let fromBulk = bulk.popOldest(root, atLeast: count).map(\.record)
            let fromGroups = Self.popGroups(&groups, root, atLeast: count)
            #expect(fromBulk == fromGroups, "seed \(seed): the first \(count)")
            #expect(fromBulk.count >= min(count, 300))
            #expect(ReviewRegressionTests.heapIsValid(bulk, root), "seed \(seed): what stays is a heap")
            #expect(Set(bulk.victims(root)) == Set(groups.victims(root)))
            // The rest comes out in the same order too; then everything goes back and the heap holds all again.
            let rest = Self.popGroups(&bulk, root, atLeast: .max)
            #expect(rest == Self.popGroups(&groups, root, atLeast: .max), "seed \(seed): the rest")
            for r in fromBulk + rest { bulk.syncVictim(r) }
            #expect(bulk.victims(root).count == 300)
            #expect(ReviewRegressionTests.heapIsValid(bulk, root))
            #expect(Self.popGroups(&bulk, root, atLeast: .max) == fromBulk + rest, "seed \(seed): after syncVictim")
        }
    }

    @Test func aBulkPopKeepsEachGroupWhole() {
        var (l, root) = Self.ledger(files: 300, seed: 9)
        let popped = l.popOldest(root, atLeast: 100)
        let lastAge = popped.last!.age
        #expect(l.victims(root).allSatisfy { l.victimAge($0) > lastAge }, "a group split at the boundary")
    }
}
