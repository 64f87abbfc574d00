import BitCollections

/// What one trim of one root deleted on disk, which the ledger has not taken in yet. A trim reads the ledger and
/// never writes it: each deletion it makes goes here, in order, and the engine applies the whole list once the
/// trim is over (`SizeLedger.apply`), in one place. Meanwhile the trim reads the ledger as it stood before it
/// began, through this: what is gone already (`contains`), what a deletion frees given those before it
/// (`freedBytes`: a file with another name left frees nothing yet), what the root will hold (`freed`).
///
/// A dry run keeps one too, so that it reads what it would have deleted exactly as a real trim reads what it
/// did; it is then dropped, never applied. `freed` is what `apply` will subtract from the root's total
/// (`PendingRemovalsTests` checks one against the other over random ledgers).
package struct PendingRemovals {
    /// A name deleted, or a folder deleted with everything under it.
    package enum Removal: Equatable {
        case file(RecordID)
        case folder(NodeID)
    }

    package let root: RootID
    private let countsDirectories: Bool
    /// The deletions, in the order they were made.
    package private(set) var removals: [Removal] = []
    /// Record and node slab indices gone (bits: a trim of a million files marks 128 KB).
    private var records = BitSet()
    private var nodes = BitSet()
    /// Per linked inode: how many of its names in the root are gone.
    private var namesGone: [UInt64: Int] = [:]
    private var fileBytes: Int64 = 0
    private var directoryBytes: Int64 = 0
    /// Files (inodes) whose last name in the root is gone.
    package private(set) var freedFiles = 0

    package init(_ root: RootID, in ledger: SizeLedger) {
        self.root = root
        countsDirectories = ledger.account(root)?.countsDirectories ?? false
    }

    package var isEmpty: Bool { removals.isEmpty }

    /// What the root's total will have lost once these are applied.
    package var freed: Int64 { countsDirectories ? fileBytes + directoryBytes : fileBytes }

    /// Whether record `r` is gone, itself or with a folder above it.
    package func contains(_ r: RecordID) -> Bool { records.contains(r.index) }

    /// Whether directory `n` is gone, itself or with a folder above it.
    package func contains(node n: NodeID) -> Bool { nodes.contains(n.index) }

    /// How many names of record `r`'s inode are left in the root (0 before its first stat).
    package func remainingNames(ofRecord r: RecordID, in ledger: SizeLedger) -> Int {
        guard let inode = ledger.inode(ofRecord: r) else { return 0 }
        return remaining(ledger.records[r.index], inode)
    }

    /// The names of `inode` (record `rec`'s) left in the root.
    private func remaining(_ rec: FileRecord, _ inode: InodeState) -> Int {
        rec.linked ? inode.names - namesGone[rec.ino, default: 0] : inode.names
    }

    /// What deleting record `r` would free now: its bytes when it is its inode's last name left in the root.
    package func freedBytes(ofRecord r: RecordID, in ledger: SizeLedger) -> Int64 {
        guard !contains(r), let inode = ledger.inode(ofRecord: r) else { return 0 }
        return remaining(ledger.records[r.index], inode) == 1 ? inode.bytes : 0
    }

    /// Whether directory `n` holds nothing that is left: every file and every folder in it is gone.
    package func isEmptied(_ n: NodeID, in ledger: SizeLedger) -> Bool {
        var empty = true
        ledger.nodes[n.index].files.forEach { if !records.contains(Int($0)) { empty = false } }
        ledger.nodes[n.index].subdirs.forEach { if !nodes.contains(Int($0)) { empty = false } }
        return empty
    }

    /// Notes that record `r` was deleted; returns the bytes that freed.
    @discardableResult
    package mutating func removeFile(_ r: RecordID, in ledger: SizeLedger) -> Int64 {
        precondition(ledger.root(ofRecord: r) == root && !contains(r), "a file taken twice, or of another root")
        removals.append(.file(r))
        return take(r, ledger)
    }

    /// Notes that directory `n` was deleted with everything under it; returns how many of its files' names went
    /// and the bytes that freed (its files'; its folders' own bytes count in `freed` where the root counts them).
    @discardableResult
    package mutating func removeFolder(_ n: NodeID, in ledger: SizeLedger) -> (names: Int, bytes: Int64) {
        precondition(ledger.root(of: n) == root && !contains(node: n), "a folder taken twice, or of another root")
        removals.append(.folder(n))
        var taken = (names: 0, bytes: Int64(0))
        var stack = [n]
        while let d = stack.popLast() {
            guard !nodes.contains(d.index) else { continue }
            nodes.insert(d.index)
            let node = ledger.nodes[d.index]
            directoryBytes += node.bytes
            node.subdirs.forEach { stack.append(NodeID($0)) }
            node.files.forEach { raw in
                let r = RecordID(raw)
                guard !records.contains(r.index) else { return }
                taken.names += 1
                taken.bytes += take(r, ledger)
            }
        }
        return taken
    }

    /// Counts record `r` as gone; returns the bytes that freed (its inode's, with its last name in the root).
    private mutating func take(_ r: RecordID, _ ledger: SizeLedger) -> Int64 {
        let rec = ledger.records[r.index]
        // No inode before its first stat: nothing counted, nothing freed.
        let freed = ledger.inode(ofRecord: r).flatMap { remaining(rec, $0) == 1 ? $0.bytes : nil }
        records.insert(r.index)
        if rec.linked { namesGone[rec.ino, default: 0] += 1 }
        guard let freed else { return 0 }
        fileBytes += freed
        freedFiles += 1
        return freed
    }
}

extension SizeLedger {
    /// Takes in what a trim deleted (`PendingRemovals`), in the order it was deleted. Returns the names to stat
    /// again (see `removeRecord`).
    package mutating func apply(_ pending: PendingRemovals) -> [RecordID] {
        var stale: [RecordID] = []
        for removal in pending.removals {
            switch removal {
            case .file(let r): removeRecord(r, stale: &stale)
            case .folder(let n): removeSubtree(n, stale: &stale)
            }
        }
        return stale
    }
}
