import HeapModule

/// What one `stat` said about a regular file, reduced to what the ledger counts.
struct FileStatus: Equatable {
    var ino: UInt64
    var bytes: Int64
    var age: Int64
    /// `st_nlink`: more than 1 means other names may share these bytes.
    var links: UInt32 = 1
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
    var subdirs: [FileName: Int32] = [:]
    var files: [FileName: Int32] = [:]
    var live = true
}

/// One name of a regular file, with its size and age inline: no per-file object and, for the usual file with
/// one name, no per-inode table entry. Names that share an inode with another name in the same root are
/// `linked`: their bytes, age and state then live in the root's `LinkGroup` for that inode, counted once.
struct FileRecord {
    var dir: Int32
    /// The root this name is counted in (kept here so a record detached by a rename still knows it).
    var root: Int32
    var name: [UInt8]
    /// 0 until the first stat of this name.
    var ino: UInt64 = 0
    /// Counted bytes (inline files only).
    var bytes: Int64 = 0
    /// Age key (inline files only).
    var age: Int64 = 0
    /// Bumped whenever a new heap entry is pushed for this record (or its slot is reused): only the newest is valid.
    var gen: UInt32 = 0
    var flags: RecordFlags = [.attached, .live]

    var live: Bool { flags.contains(.live) }
    var attached: Bool { flags.contains(.attached) }
}

struct RecordFlags: OptionSet {
    let rawValue: UInt8
    /// In its directory's `files` table (not while a rename is pending).
    static let attached = RecordFlags(rawValue: 1)
    static let live = RecordFlags(rawValue: 2)
    /// Modified and not yet closed: not a trim victim while others remain (inline files).
    static let writing = RecordFlags(rawValue: 4)
    /// State lives in the root's link group for `ino`.
    static let linked = RecordFlags(rawValue: 8)
    /// The age key is an `IN_OPEN` time (order = opened; inline files).
    static let opened = RecordFlags(rawValue: 16)
}

/// The shared state of an inode that has several names in one root: counted once.
struct LinkGroup {
    var bytes: Int64
    var age: Int64
    var names: Int32
    var writing = false
    var opened = false
}

/// A read-only view of a file's counted state, wherever it is stored.
struct InodeState {
    var bytes: Int64
    var age: Int64
    /// Names of this inode in the root.
    var links: Int32
    var writing: Bool
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
    /// Distinct regular files (inodes) counted.
    var files = 0
    /// Inodes with more than one name in this root.
    var links: [UInt64: LinkGroup] = [:]
    /// Oldest-first candidates, with lazily discarded stale entries.
    var heap = Heap<AgeEntry>()
    var records = 0
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
    /// Names whose inode lost another name: a change made through the removed name (a truncate just before an
    /// `rm` or a move out) reached them too, so the engine stats them again.
    var needsStat: [Int32] = []

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
        return Self.join(relativePath(of: rec.dir), rec.name)
    }

    /// `directory/name`, or `name` for the root's own entries ("" directory).
    static func join(_ directory: [UInt8], _ name: [UInt8]) -> [UInt8] {
        var p = directory
        if !p.isEmpty { p.append(UInt8(ascii: "/")) }
        p.append(contentsOf: name)
        return p
    }

    /// Applies a fresh stat of a record's name: moves it to the right inode and updates bytes and age.
    /// `keepOpenedAge` keeps an `IN_OPEN` time as the age key (order = opened).
    func apply(_ s: FileStatus, to r: Int32, keepOpenedAge: Bool) {
        let root = records[Int(r)].root
        if records[Int(r)].ino != 0 && records[Int(r)].ino != s.ino { detach(r) }
        if records[Int(r)].ino == 0 {
            attach(r, s)
            pushEntry(r, root: root)
            return
        }
        // Same inode: a new size and maybe a new age.
        var changedAge = false
        if records[Int(r)].flags.contains(.linked), var group = accounts[root]!.links[s.ino] {
            accounts[root]!.total += s.bytes - group.bytes
            group.bytes = s.bytes
            let age = keepOpenedAge && group.opened ? group.age : s.age
            if age != group.age { group.age = age; changedAge = true }
            accounts[root]!.links[s.ino] = group
        } else {
            accounts[root]!.total += s.bytes - records[Int(r)].bytes
            records[Int(r)].bytes = s.bytes
            let age = keepOpenedAge && records[Int(r)].flags.contains(.opened) ? records[Int(r)].age : s.age
            if age != records[Int(r)].age { records[Int(r)].age = age; changedAge = true }
        }
        if changedAge { pushEntry(r, root: root) }
    }

    /// Counts record `r` (not yet counted) as a name of inode `s.ino`.
    private func attach(_ r: Int32, _ s: FileStatus) {
        let root = records[Int(r)].root
        records[Int(r)].ino = s.ino
        if accounts[root]!.links[s.ino] == nil && s.links > 1 {
            // Another name of this inode may already be counted inline: move it (them) into a link group.
            // A scan of the root's records, once per inode that gains a second name here.
            var group: LinkGroup?
            for (i, other) in records.enumerated() where i != Int(r) && other.root == root && other.ino == s.ino
                && other.flags.contains(.live) && !other.flags.contains(.linked) {
                if group == nil {
                    group = LinkGroup(bytes: other.bytes, age: other.age, names: 0, writing: other.flags.contains(.writing),
                                      opened: other.flags.contains(.opened))
                }
                group!.names += 1
                records[i].flags.insert(.linked)
            }
            if let group { accounts[root]!.links[s.ino] = group }
        }
        if var group = accounts[root]!.links[s.ino] {
            group.names += 1
            accounts[root]!.total += s.bytes - group.bytes
            group.bytes = s.bytes
            if !group.opened { group.age = s.age }
            accounts[root]!.links[s.ino] = group
            records[Int(r)].flags.insert(.linked)
        } else if s.links > 1 {
            accounts[root]!.links[s.ino] = LinkGroup(bytes: s.bytes, age: s.age, names: 1)
            accounts[root]!.total += s.bytes
            accounts[root]!.files += 1
            records[Int(r)].flags.insert(.linked)
        } else {
            records[Int(r)].bytes = s.bytes
            records[Int(r)].age = s.age
            records[Int(r)].flags.remove(.linked)
            accounts[root]!.total += s.bytes
            accounts[root]!.files += 1
        }
    }

    /// Stops counting record `r`'s inode through this name; its bytes leave the total with its last name.
    private func detach(_ r: Int32) {
        let rec = records[Int(r)]
        guard rec.ino != 0 else { return }
        let root = rec.root
        if rec.flags.contains(.linked), var group = accounts[root]!.links[rec.ino] {
            group.names -= 1
            if group.names <= 0 {
                accounts[root]!.total -= group.bytes
                accounts[root]!.files -= 1
                accounts[root]!.links[rec.ino] = nil
            } else {
                accounts[root]!.links[rec.ino] = group
                for (i, other) in records.enumerated() where i != Int(r) && other.root == root && other.ino == rec.ino
                    && other.flags.contains([.live, .linked]) {
                    needsStat.append(Int32(i))
                }
            }
        } else {
            accounts[root]!.total -= rec.bytes
            accounts[root]!.files -= 1
        }
        records[Int(r)].ino = 0
        records[Int(r)].bytes = 0
        records[Int(r)].flags.subtract([.linked, .writing, .opened])
    }

    /// Records an `IN_OPEN` at `time` (nanoseconds): for `order = opened` the file's age key becomes `time`.
    func markOpened(_ r: Int32, time: Int64) {
        let rec = records[Int(r)]
        guard rec.ino != 0 else { return }
        if rec.flags.contains(.linked), accounts[rec.root]!.links[rec.ino] != nil {
            accounts[rec.root]!.links[rec.ino]!.opened = true
            accounts[rec.root]!.links[rec.ino]!.age = time
        } else {
            records[Int(r)].flags.insert(.opened)
            records[Int(r)].age = time
        }
        pushEntry(r, root: rec.root)
    }

    func setWriting(_ r: Int32, _ writing: Bool) {
        let rec = records[Int(r)]
        guard rec.ino != 0 else { return }
        if rec.flags.contains(.linked), accounts[rec.root]!.links[rec.ino] != nil {
            accounts[rec.root]!.links[rec.ino]!.writing = writing
        } else if writing {
            records[Int(r)].flags.insert(.writing)
        } else {
            records[Int(r)].flags.remove(.writing)
        }
    }

    /// The counted state of a record's file (`nil` before its first stat).
    func inode(ofRecord r: Int32) -> InodeState? {
        let rec = records[Int(r)]
        guard rec.ino != 0, rec.flags.contains(.live) else { return nil }
        if rec.flags.contains(.linked), let g = accounts[rec.root]?.links[rec.ino] {
            return InodeState(bytes: g.bytes, age: g.age, links: g.names, writing: g.writing)
        }
        return InodeState(bytes: rec.bytes, age: rec.age, links: 1, writing: rec.flags.contains(.writing))
    }

    /// Removes a file name; its inode's bytes leave the total with its last name.
    func removeRecord(_ r: Int32) {
        let rec = records[Int(r)]
        guard rec.flags.contains(.live) else { return }
        let root = rec.root
        if rec.flags.contains(.attached), nodes[Int(rec.dir)].files[rec.name] == r { nodes[Int(rec.dir)].files[rec.name] = nil }
        detach(r)
        accounts[root]?.records -= 1
        records[Int(r)].flags = []
        records[Int(r)].name = []
        records[Int(r)].gen &+= 1
        freeRecords.append(r)
    }

    /// Takes a file name out of its directory's table, keeping its bytes counted (a rename in flight).
    func detachRecord(_ r: Int32) {
        let rec = records[Int(r)]
        if rec.flags.contains(.attached), nodes[Int(rec.dir)].files[rec.name] == r { nodes[Int(rec.dir)].files[rec.name] = nil }
        records[Int(r)].flags.remove(.attached)
    }

    /// Puts a detached record at `dir/name` within the same root, replacing what was there.
    func attachRecord(_ r: Int32, dir: Int32, name: [UInt8]) {
        if let existing = nodes[Int(dir)].files[name], existing != r { removeRecord(existing) }
        records[Int(r)].dir = dir
        records[Int(r)].name = name
        records[Int(r)].flags.insert(.attached)
        nodes[Int(dir)].files[name] = r
        pushEntry(r, root: nodes[Int(dir)].root)
    }

    // MARK: Oldest-first candidates

    private func pushEntry(_ r: Int32, root: Int32) {
        records[Int(r)].gen &+= 1
        guard let state = inode(ofRecord: r) else { return }
        accounts[root]!.heap.insert(AgeEntry(age: state.age, record: r, gen: records[Int(r)].gen))
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
        return rec.flags.contains([.live, .attached]) && rec.gen == e.gen && rec.ino != 0
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
            let inode = inode(ofRecord: top.record)!
            if inode.age != top.age {
                // The inode's age changed through another hard link: re-queue at the current age.
                accounts[root]!.heap.insert(AgeEntry(age: inode.age, record: top.record, gen: top.gen))
                continue
            }
            groupAge = top.age
            group.append((top.record, top.age))
        }
        if group.count > 1 {
            // Coarse timestamps make large groups common (files written in the same jiffy): build each path once.
            let keyed = group.map { (path: relativePath(ofRecord: $0.0), entry: $0) }
            group = keyed.sorted { $0.path.lexicographicallyPrecedes($1.path) }.map(\.entry)
        }
        return group
    }

    /// Returns popped candidates that were skipped (protected, vetoed, being written) to the heap.
    func pushBack(_ r: Int32, age: Int64) {
        let root = self.root(ofRecord: r)
        let rec = records[Int(r)]
        guard rec.flags.contains(.live) else { return }
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
