import Testing
@testable import CacheWardenLedger

/// A trim reads the ledger through `PendingRemovals` and the engine applies them after it: what the trim read
/// (each deletion's freed bytes, the files and bytes the root lost, what is gone) must be what applying them does
/// to the ledger. Random trees of nested folders with their own bytes, hard links inside the root (two and three
/// names) and outside it, names not statted yet; random deletions of files and folders, in random order.
@Suite struct PendingRemovalsTests {
    struct Tree {
        var ledger = SizeLedger()
        let root = RootID(0)
        var folders: [NodeID] = []
        var files: [RecordID] = []
    }

    static func tree(seed: UInt64, countsDirectories: Bool) -> Tree {
        var rng = ModelBasedTotalsTests.Generator(state: seed)
        var t = Tree()
        let top = t.ledger.addRoot(
            t.root, path: Array("/c".utf8), ino: 1, dev: 1, bytes: 4096, countsDirectories: countsDirectories,
            ordered: true)
        t.folders = [top]
        for d in 0..<12 {
            let parent = t.folders[rng.below(t.folders.count)]
            let node = Array("d\(d)".utf8).withUnsafeBytes {
                t.ledger.addDirectory(parent: parent, name: $0, ino: UInt64(100 + d), bytes: 4096).node
            }
            t.folders.append(node)
        }
        var ino: UInt64 = 1000
        var shared: [(ino: UInt64, links: UInt32)] = []
        for k in 0..<120 {
            let dir = t.folders[rng.below(t.folders.count)]
            let r = Array("f\(k)".utf8).withUnsafeBytes { t.ledger.record(in: dir, named: $0).record }
            t.files.append(r)
            switch rng.below(10) {
            case 0: continue // not statted yet
            case 1, 2:
                // A name of an inode with two or three names in the root, or one here and one outside.
                if let s = shared.first, rng.below(3) > 0 {
                    _ = t.ledger.apply(
                        FileStatus(ino: s.ino, bytes: 7000, age: 5, links: s.links), to: r, keepOpenedAge: false)
                } else {
                    ino += 1
                    shared.insert((ino, UInt32(2 + rng.below(2))), at: 0)
                    _ = t.ledger.apply(
                        FileStatus(ino: ino, bytes: 7000, age: 5, links: shared[0].links), to: r, keepOpenedAge: false)
                }
            default:
                ino += 1
                let bytes = Int64(rng.below(4) == 0 ? 0 : rng.below(9000)) // empty files count as files too
                _ = t.ledger.apply(
                    FileStatus(ino: ino, bytes: bytes, age: Int64(rng.below(50)), links: 1), to: r, keepOpenedAge: false
                )
            }
        }
        return t
    }

    @Test(arguments: [false, true])
    func whatATrimReadsIsWhatApplyingItDoes(countsDirectories: Bool) {
        for seed in UInt64(1)...40 {
            let t = Self.tree(seed: seed, countsDirectories: countsDirectories)
            var rng = ModelBasedTotalsTests.Generator(state: seed &* 31)
            var pending = PendingRemovals(t.root, in: t.ledger)
            // Applied one by one beside the pending list: each deletion's freed bytes is the total's drop.
            var stepwise = t.ledger
            let before = t.ledger.account(t.root)!
            for _ in 0..<(5 + rng.below(40)) {
                let fileTotal = stepwise.account(t.root)!.fileBytes
                if rng.below(4) == 0 {
                    let n = t.folders[1 + rng.below(t.folders.count - 1)]
                    guard !pending.contains(node: n) else { continue }
                    let names = Self.namesUnder(n, t.ledger).filter { !pending.contains($0) }.count
                    let taken = pending.removeFolder(n, in: t.ledger)
                    #expect(taken.names == names, "seed \(seed)")
                    var single = PendingRemovals(t.root, in: stepwise)
                    single.removeFolder(n, in: stepwise)
                    _ = stepwise.apply(single)
                    #expect(fileTotal - stepwise.account(t.root)!.fileBytes == taken.bytes, "seed \(seed): folder")
                } else {
                    let r = t.files[rng.below(t.files.count)]
                    guard !pending.contains(r) else { continue }
                    #expect(t.ledger.isLive(r) && stepwise.isLive(r))
                    let expected = pending.freedBytes(ofRecord: r, in: t.ledger)
                    #expect(expected == stepwise.freedBytes(ofRecord: r), "seed \(seed): what it will free")
                    let names = stepwise.inode(ofRecord: r)?.names ?? 0
                    #expect(pending.remainingNames(ofRecord: r, in: t.ledger) == names)
                    #expect(pending.removeFile(r, in: t.ledger) == expected)
                    _ = stepwise.removeRecord(r)
                    #expect(fileTotal - stepwise.account(t.root)!.fileBytes == expected, "seed \(seed): file")
                }
            }
            var applied = t.ledger
            _ = applied.apply(pending)
            let after = applied.account(t.root)!
            #expect(before.total - pending.freed == after.total, "seed \(seed): the total")
            #expect(before.files - pending.freedFiles == after.files, "seed \(seed): the files")
            #expect(after.total == stepwise.account(t.root)!.total && after.files == stepwise.account(t.root)!.files)
            for r in t.files { #expect(applied.isLive(r) == !pending.contains(r), "seed \(seed): what is gone") }
            for n in t.folders { #expect(applied.isLive(n) == !pending.contains(node: n), "seed \(seed)") }
            for n in t.folders where applied.isLive(n) {
                let empty = applied.node(n).files.isEmpty && applied.node(n).subdirs.isEmpty
                #expect(pending.isEmptied(n, in: t.ledger) == empty, "seed \(seed): an emptied folder")
            }
        }
    }

    @Test func aFileOfAnotherRootOrTakenTwiceIsNotTaken() {
        var t = Self.tree(seed: 3, countsDirectories: false)
        let r = t.files.first { t.ledger.inode(ofRecord: $0) != nil }!
        var pending = PendingRemovals(t.root, in: t.ledger)
        pending.removeFile(r, in: t.ledger)
        #expect(pending.contains(r))
        #expect(pending.freedBytes(ofRecord: r, in: t.ledger) == 0, "a name already gone frees nothing again")
        #expect(t.ledger.isLive(r), "the ledger is not written until the pending list is applied")
        _ = t.ledger.apply(pending)
        #expect(!t.ledger.isLive(r))
    }

    static func namesUnder(_ n: NodeID, _ l: SizeLedger) -> [RecordID] {
        var out: [RecordID] = []
        l.forEachRecord(under: n) { out.append($0) }
        return out
    }
}
