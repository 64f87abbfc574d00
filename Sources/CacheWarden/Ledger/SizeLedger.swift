import HeapModule

/// What one `stat` said about a regular file, reduced to what the ledger counts.
struct FileStatus: Equatable {
    var ino: UInt64
    var bytes: Int64
    var age: Int64
}

/// A directory of a registered tree. Nodes live in a slab (`SizeLedger.nodes`) and refer to each other by index,
/// so there is no per-directory object and paths are rebuilt from parents on demand.
struct DirectoryNode {
    var parent: Int32
    /// The entry name; for a root node, its absolute path.
    var name: [UInt8]
    var root: Int32
    var wd: Int32 = -1
    var ino: UInt64
    var subdirs: [[UInt8]: Int32] = [:]
    var files: [[UInt8]: Int32] = [:]
    var live = true
}

/// One name of a regular file. Hard links are several records sharing one `InodeState`.
struct FileRecord {
    var dir: Int32
    /// The root this name is counted in (kept here so a record detached by a rename still knows it).
    var root: Int32
    var name: [UInt8]
    /// 0 until the first stat of this name.
    var ino: UInt64 = 0
    /// Bumped whenever a new heap entry is pushed for this record (or its slot is reused): only the newest is valid.
    var gen: UInt32 = 0
    /// In its directory's `files` table (false while a rename is pending).
    var attached = true
    var live = true
}

/// Per-inode accounting inside one root: its bytes count once however many names it has.
struct InodeState {
    var bytes: Int64
    var age: Int64
    var links: Int32
    /// Modified and not yet closed: not a trim victim while others remain.
    var writing = false
    /// Last `IN_OPEN` seen (for `order = opened`), nanoseconds since 1970.
    var opened: Int64?
}

/// A candidate in a root's oldest-first heap.
struct AgeEntry: Comparable {
    var age: Int64
    var record: Int32
    var gen: UInt32
    static func < (a: AgeEntry, b: AgeEntry) -> Bool { a.age != b.age ? a.age < b.age : a.record < b.record }
}

/// The running totals of one registered root.
struct RootAccount {
    var rootNode: Int32
    var dev: UInt64
    var total: Int64 = 0
    var inodes: [UInt64: InodeState] = [:]
    /// Oldest-first candidates, with lazily discarded stale entries.
    var heap = Heap<AgeEntry>()
    var records = 0
    var files: Int { inodes.count }
}

/// The ledger of sizes: every watched directory, every regular file name, and per-root totals kept exact by
/// deltas (no rescans). Pure bookkeeping: it makes no system calls, so it is tested without a filesystem.
/// Confined to the watcher's queue.
final class SizeLedger {
    private(set) var nodes: [DirectoryNode] = []
    private var freeNodes: [Int32] = []
    private(set) var records: [FileRecord] = []
    private var freeRecords: [Int32] = []
    var accounts: [Int32: RootAccount] = [:]

    // MARK: Roots and directories

    /// Creates the root node and account of a new root `id` at `path`.
    func addRoot(_ id: Int32, path: [UInt8], ino: UInt64, dev: UInt64) -> Int32 {
        let node = allocNode(DirectoryNode(parent: -1, name: path, root: id, ino: ino))
        accounts[id] = RootAccount(rootNode: node, dev: dev)
        return node
    }

    /// Adds (or returns the existing) subdirectory `name` of `parent`. An existing entry with another inode is
    /// replaced (its subtree removed; its watch descriptors are appended to `droppedWatches`).
    func addDirectory(parent: Int32, name: [UInt8], ino: UInt64, droppedWatches: inout [Int32]) -> (node: Int32, isNew: Bool) {
        if let existing = nodes[Int(parent)].subdirs[name] {
            if nodes[Int(existing)].ino == ino { return (existing, false) }
            removeSubtree(existing, droppedWatches: &droppedWatches)
        }
        if let file = nodes[Int(parent)].files[name] { removeRecord(file) }
        let node = allocNode(DirectoryNode(parent: parent, name: name, root: nodes[Int(parent)].root, ino: ino))
        nodes[Int(parent)].subdirs[name] = node
        return (node, true)
    }

    func setWatch(_ node: Int32, wd: Int32) { nodes[Int(node)].wd = wd }
    func node(_ index: Int32) -> DirectoryNode { nodes[Int(index)] }

    /// Removes a directory node, all below it, and their files from the totals.
    func removeSubtree(_ top: Int32, droppedWatches: inout [Int32]) {
        let t = nodes[Int(top)]
        if t.parent >= 0, nodes[Int(t.parent)].subdirs[t.name] == top {
            nodes[Int(t.parent)].subdirs[t.name] = nil
        }
        var stack = [top]
        while let n = stack.popLast() {
            let node = nodes[Int(n)]
            stack.append(contentsOf: node.subdirs.values)
            for r in node.files.values { removeRecord(r) }
            if node.wd >= 0 { droppedWatches.append(node.wd) }
            nodes[Int(n)] = DirectoryNode(parent: -1, name: [], root: -1, ino: 0, live: false)
            freeNodes.append(n)
        }
    }

    /// Takes a directory out of its parent's table (a rename whose destination is not known yet).
    func detachDirectory(_ n: Int32) {
        let node = nodes[Int(n)]
        if node.parent >= 0, nodes[Int(node.parent)].subdirs[node.name] == n {
            nodes[Int(node.parent)].subdirs[node.name] = nil
        }
    }

    /// Puts a detached directory under `parent` as `name` (same root), replacing what was there.
    func attachDirectory(_ n: Int32, parent: Int32, name: [UInt8], droppedWatches: inout [Int32]) {
        if let existing = nodes[Int(parent)].subdirs[name], existing != n {
            removeSubtree(existing, droppedWatches: &droppedWatches)
        }
        if let file = nodes[Int(parent)].files[name] { removeRecord(file) }
        nodes[Int(n)].parent = parent
        nodes[Int(n)].name = name
        nodes[Int(parent)].subdirs[name] = n
    }

    /// Absolute path of a directory node.
    func path(of n: Int32) -> [UInt8] {
        var parts: [[UInt8]] = []
        var i = n
        while i >= 0 {
            parts.append(nodes[Int(i)].name)
            i = nodes[Int(i)].parent
        }
        var out: [UInt8] = []
        for (k, p) in parts.reversed().enumerated() {
            if k > 0 { out.append(UInt8(ascii: "/")) }
            out.append(contentsOf: p)
        }
        return out
    }

    /// Path of a directory node relative to its root ("" for the root).
    func relativePath(of n: Int32) -> [UInt8] {
        var parts: [[UInt8]] = []
        var i = n
        while i >= 0, nodes[Int(i)].parent >= 0 {
            parts.append(nodes[Int(i)].name)
            i = nodes[Int(i)].parent
        }
        return Array(parts.reversed().joined(separator: [UInt8(ascii: "/")]))
    }

    /// Names from the root down to `n` (excluding the root), for component-wise safe opening.
    func components(of n: Int32) -> [Int32] {
        var chain: [Int32] = []
        var i = n
        while i >= 0, nodes[Int(i)].parent >= 0 {
            chain.append(i)
            i = nodes[Int(i)].parent
        }
        return chain.reversed()
    }

    // MARK: Files

    /// The record of `name` in `dir`, created (unstatted) when missing.
    func record(dir: Int32, name: [UInt8]) -> (record: Int32, isNew: Bool) {
        if let r = nodes[Int(dir)].files[name] { return (r, false) }
        let r = allocRecord(FileRecord(dir: dir, root: nodes[Int(dir)].root, name: name))
        nodes[Int(dir)].files[name] = r
        accounts[nodes[Int(dir)].root]!.records += 1
        return (r, true)
    }

    func existingRecord(dir: Int32, name: [UInt8]) -> Int32? { nodes[Int(dir)].files[name] }
    func fileRecord(_ r: Int32) -> FileRecord { records[Int(r)] }
    func root(ofRecord r: Int32) -> Int32 { records[Int(r)].root }

    /// Path of a file relative to its root.
    func relativePath(ofRecord r: Int32) -> [UInt8] {
        let rec = records[Int(r)]
        var p = relativePath(of: rec.dir)
        if !p.isEmpty { p.append(UInt8(ascii: "/")) }
        p.append(contentsOf: rec.name)
        return p
    }

    func absolutePath(ofRecord r: Int32) -> [UInt8] {
        let rec = records[Int(r)]
        var p = path(of: rec.dir)
        p.append(UInt8(ascii: "/"))
        p.append(contentsOf: rec.name)
        return p
    }

    /// Applies a fresh stat of a record's name: moves it to the right inode and updates bytes and age.
    /// `keepOpenedAge` keeps an `IN_OPEN` time as the age key (order = opened).
    func apply(_ s: FileStatus, to r: Int32, keepOpenedAge: Bool) {
        let root = self.root(ofRecord: r)
        let old = records[Int(r)].ino
        if old != 0 && old != s.ino { releaseInode(root, old) }
        var changedAge = false
        if old != s.ino {
            if var inode = accounts[root]!.inodes[s.ino] {
                inode.links += 1
                accounts[root]!.total += s.bytes - inode.bytes
                inode.bytes = s.bytes
                let age = keepOpenedAge ? (inode.opened ?? s.age) : s.age
                inode.age = age
                accounts[root]!.inodes[s.ino] = inode
            } else {
                accounts[root]!.inodes[s.ino] = InodeState(bytes: s.bytes, age: s.age, links: 1)
                accounts[root]!.total += s.bytes
            }
            records[Int(r)].ino = s.ino
            changedAge = true
        } else {
            let inode = accounts[root]!.inodes[s.ino]!
            accounts[root]!.total += s.bytes - inode.bytes
            accounts[root]!.inodes[s.ino]!.bytes = s.bytes
            let age = keepOpenedAge ? (inode.opened ?? s.age) : s.age
            if age != inode.age {
                accounts[root]!.inodes[s.ino]!.age = age
                changedAge = true
            }
        }
        if changedAge { pushEntry(r, root: root) }
    }

    /// Records an `IN_OPEN` at `time` (nanoseconds): for `order = opened` the inode's age key becomes `time`.
    func markOpened(_ r: Int32, time: Int64) {
        let root = self.root(ofRecord: r)
        let ino = records[Int(r)].ino
        guard ino != 0, accounts[root]!.inodes[ino] != nil else { return }
        accounts[root]!.inodes[ino]!.opened = time
        accounts[root]!.inodes[ino]!.age = time
        pushEntry(r, root: root)
    }

    func setWriting(_ r: Int32, _ writing: Bool) {
        let root = self.root(ofRecord: r)
        let ino = records[Int(r)].ino
        guard ino != 0, accounts[root]!.inodes[ino] != nil else { return }
        accounts[root]!.inodes[ino]!.writing = writing
    }

    func inode(ofRecord r: Int32) -> InodeState? {
        let ino = records[Int(r)].ino
        guard ino != 0 else { return nil }
        return accounts[root(ofRecord: r)]!.inodes[ino]
    }

    /// Removes a file name; its inode's bytes leave the total with its last name.
    func removeRecord(_ r: Int32) {
        let rec = records[Int(r)]
        guard rec.live else { return }
        let root = rec.root
        if rec.attached, nodes[Int(rec.dir)].files[rec.name] == r { nodes[Int(rec.dir)].files[rec.name] = nil }
        if rec.ino != 0 { releaseInode(root, rec.ino) }
        accounts[root]!.records -= 1
        records[Int(r)].live = false
        records[Int(r)].attached = false
        records[Int(r)].name = []
        records[Int(r)].gen &+= 1
        freeRecords.append(r)
    }

    /// Takes a file name out of its directory's table, keeping its bytes counted (a rename in flight).
    func detachRecord(_ r: Int32) {
        let rec = records[Int(r)]
        if rec.attached, nodes[Int(rec.dir)].files[rec.name] == r { nodes[Int(rec.dir)].files[rec.name] = nil }
        records[Int(r)].attached = false
    }

    /// Puts a detached record at `dir/name` within the same root, replacing what was there.
    func attachRecord(_ r: Int32, dir: Int32, name: [UInt8]) {
        if let existing = nodes[Int(dir)].files[name], existing != r { removeRecord(existing) }
        records[Int(r)].dir = dir
        records[Int(r)].name = name
        records[Int(r)].attached = true
        nodes[Int(dir)].files[name] = r
        pushEntry(r, root: nodes[Int(dir)].root)
    }

    private func releaseInode(_ root: Int32, _ ino: UInt64) {
        guard var inode = accounts[root]!.inodes[ino] else { return }
        inode.links -= 1
        if inode.links <= 0 {
            accounts[root]!.total -= inode.bytes
            accounts[root]!.inodes[ino] = nil
        } else {
            accounts[root]!.inodes[ino] = inode
        }
    }

    // MARK: Oldest-first candidates

    private func pushEntry(_ r: Int32, root: Int32) {
        records[Int(r)].gen &+= 1
        let rec = records[Int(r)]
        guard rec.ino != 0, let inode = accounts[root]!.inodes[rec.ino] else { return }
        accounts[root]!.heap.insert(AgeEntry(age: inode.age, record: r, gen: rec.gen))
        compactIfNeeded(root)
    }

    /// Rebuilds a heap that is mostly stale entries (each age change leaves one behind): amortised O(1).
    private func compactIfNeeded(_ root: Int32) {
        let account = accounts[root]!
        guard account.heap.count > 2 * account.records + 1024 else { return }
        var fresh: [AgeEntry] = []
        fresh.reserveCapacity(account.records)
        while let e = accounts[root]!.heap.popMin() {
            if isCurrent(e) { fresh.append(e) }
        }
        accounts[root]!.heap = Heap(fresh)
    }

    private func isCurrent(_ e: AgeEntry) -> Bool {
        let rec = records[Int(e.record)]
        return rec.live && rec.attached && rec.gen == e.gen && rec.ino != 0
    }

    /// Pops the oldest valid records of `root` that share one age key, ordered by path (the deterministic
    /// tie-break). Returns `[]` when no candidate is left. O(k log n) for k popped entries.
    func popOldestGroup(_ root: Int32) -> [(record: Int32, age: Int64)] {
        var group: [(Int32, Int64)] = []
        var groupAge: Int64?
        while let top = accounts[root]!.heap.min {
            if let g = groupAge, top.age != g { break }
            _ = accounts[root]!.heap.popMin()
            guard isCurrent(top) else { continue }
            let inode = accounts[root]!.inodes[records[Int(top.record)].ino]!
            if inode.age != top.age {
                // The inode's age changed through another hard link: re-queue at the current age.
                accounts[root]!.heap.insert(AgeEntry(age: inode.age, record: top.record, gen: top.gen))
                continue
            }
            groupAge = top.age
            group.append((top.record, top.age))
        }
        if group.count > 1 {
            group.sort { relativePath(ofRecord: $0.0).lexicographicallyPrecedes(relativePath(ofRecord: $1.0)) }
        }
        return group
    }

    /// Returns popped candidates that were skipped (protected, vetoed, being written) to the heap.
    func pushBack(_ r: Int32, age: Int64) {
        let root = self.root(ofRecord: r)
        let rec = records[Int(r)]
        guard rec.live else { return }
        accounts[root]!.heap.insert(AgeEntry(age: age, record: r, gen: rec.gen))
    }

    /// All live records of a root (for clear and expiry sweeps that visit every file).
    func records(ofRoot root: Int32) -> [Int32] {
        var out: [Int32] = []
        var stack = [accounts[root]!.rootNode]
        while let n = stack.popLast() {
            stack.append(contentsOf: nodes[Int(n)].subdirs.values)
            out.append(contentsOf: nodes[Int(n)].files.values)
        }
        return out
    }

    /// Removes a root and everything under it.
    func removeRoot(_ id: Int32, droppedWatches: inout [Int32]) {
        guard let account = accounts[id] else { return }
        removeSubtree(account.rootNode, droppedWatches: &droppedWatches)
        accounts[id] = nil
    }

    // MARK: Slabs

    private func allocNode(_ n: DirectoryNode) -> Int32 {
        if let i = freeNodes.popLast() { nodes[Int(i)] = n; return i }
        nodes.append(n)
        return Int32(nodes.count - 1)
    }

    private func allocRecord(_ r: FileRecord) -> Int32 {
        if let i = freeRecords.popLast() {
            let gen = records[Int(i)].gen &+ 1
            records[Int(i)] = r
            records[Int(i)].gen = gen
            return i
        }
        records.append(r)
        return Int32(records.count - 1)
    }
}
