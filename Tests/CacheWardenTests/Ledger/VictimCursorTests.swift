import Testing
@testable import CacheWardenLedger

/// `VictimCursor` — a trim's way through a root's victims, which leaves the heap as it is — against a reference:
/// every victim sorted by age, then by path. Both of its ways (the frontier walk, the one sort when a trim asks
/// for a fair share of the heap at once) and any mix of request sizes give that order, in whole same-age groups.
@Suite struct VictimCursorTests {
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

    /// Every victim, oldest first, ties by path.
    static func reference(_ l: SizeLedger, _ root: RootID) -> [RecordID] {
        l.victims(root).map { (r: $0, age: l.victimAge($0), path: l.relativePath(ofRecord: $0)) }
            .sorted { $0.age != $1.age ? $0.age < $1.age : $0.path.lexicographicallyPrecedes($1.path) }.map(\.r)
    }

    @Test(arguments: [1, 2, 40, 150, 299, 300, 1000])
    func theCursorGivesEveryVictimOldestFirstTiesByPath(first: Int) {
        for seed in UInt64(1)...6 {
            let (l, root) = Self.ledger(files: 300, seed: seed)
            let heap = l.victims(root)
            var cursor = VictimCursor(root)
            let head = cursor.next(atLeast: first, in: l)
            #expect(head.count >= min(first, 300), "seed \(seed)")
            var all = head.map(\.record)
            var size = 1
            while case let more = cursor.next(atLeast: size, in: l), !more.isEmpty {
                all += more.map(\.record)
                size = size % 5 + 1 // requests of 1 to 5, as a trim's later ones are
            }
            #expect(all == Self.reference(l, root), "seed \(seed): first \(first)")
            #expect(l.victims(root) == heap, "seed \(seed): the heap is left as it was")
            #expect(cursor.next(atLeast: 1, in: l).isEmpty)
        }
    }

    @Test(arguments: [1, 100])
    func eachRequestEndsAtTheEndOfAnAgeGroup(first: Int) {
        let (l, root) = Self.ledger(files: 300, seed: 9)
        var cursor = VictimCursor(root)
        let head = cursor.next(atLeast: first, in: l)
        let lastAge = head.last!.age
        let taken = Set(head.map(\.record))
        #expect(
            l.victims(root).allSatisfy { taken.contains($0) || l.victimAge($0) > lastAge },
            "a group split at the boundary")
    }
}
