/// Directories: filing subdirectories by name, renames of whole subtrees, removal, paths, and the one walk over
/// a subtree that every sweep uses.
extension SizeLedger {
    package func isLive(_ n: NodeID) -> Bool { n.index < nodes.count && nodes[n.index].live }
    package func node(_ n: NodeID) -> DirectoryNode { nodes[n.index] }
    package func root(of n: NodeID) -> RootID { nodes[n.index].root }
    package func parent(of n: NodeID) -> NodeID { nodes[n.index].parent }
    package func isRoot(_ n: NodeID) -> Bool { nodes[n.index].parent == .none }

    /// Whether a backend watches directory `n` (see `DirectoryNode.watched`).
    package func isWatched(_ n: NodeID) -> Bool { isLive(n) && nodes[n.index].watched }

    package mutating func setWatched(_ n: NodeID, _ watched: Bool) {
        guard isLive(n) else { return }
        nodes[n.index].watched = watched
    }
    package func name(of n: NodeID) -> [UInt8] { names.copy(nodes[n.index].name) }

    /// The subdirectory `name` of `parent`, if the ledger has it.
    package func subdirectory(of parent: NodeID, named name: UnsafeRawBufferPointer, hash: Int? = nil) -> NodeID? {
        nodes[parent.index].subdirs.find(hash: hash ?? NameArena.hash(name)) { names.equals(nodes[Int($0)].name, name) }
            .map { NodeID($0) }
    }

    /// Adds (or returns the existing) subdirectory `name` of `parent`. An existing entry with another inode was
    /// replaced on disk: its subtree goes. A file record of that name goes too (a directory took its place).
    /// `stale`: the names to stat again, which what went leaves behind (see `removeRecord`).
    package mutating func addDirectory(
        parent: NodeID, name: UnsafeRawBufferPointer, ino: UInt64,
        bytes: Int64 = 0
    ) -> (node: NodeID, isNew: Bool, stale: [RecordID]) {
        let hash = NameArena.hash(name)
        var stale: [RecordID] = []
        if let existing = subdirectory(of: parent, named: name, hash: hash) {
            if nodes[existing.index].ino == ino { return (existing, false, []) }
            removeSubtree(existing, stale: &stale)
        }
        if let file = existingRecord(in: parent, named: name) { removeRecord(file, stale: &stale) }
        let root = nodes[parent.index].root
        let ref = names.store(name)
        let node = allocNode(DirectoryNode(parent: parent, root: root, name: ref, ino: ino, bytes: bytes))
        fileSubdirectory(node, in: parent, hash: hash)
        accounts[root.index].directoryBytes += bytes
        accounts[root.index].directories += 1
        return (node, true, stale)
    }

    /// Sets a directory's own allocated bytes (after a stat of it).
    package mutating func setDirectoryBytes(_ n: NodeID, _ bytes: Int64) {
        let root = nodes[n.index].root
        accounts[root.index].directoryBytes += bytes - nodes[n.index].bytes
        nodes[n.index].bytes = bytes
    }

    /// Removes a directory node, all below it, and their files from the totals; the removed nodes are listed in
    /// `removedNodes`. Returns the names to stat again (see `removeRecord`).
    package mutating func removeSubtree(_ top: NodeID) -> [RecordID] {
        var stale: [RecordID] = []
        removeSubtree(top, stale: &stale)
        return stale
    }

    mutating func removeSubtree(_ top: NodeID, stale: inout [RecordID]) {
        guard isLive(top) else { return }
        detachDirectory(top)
        var stack = [top]
        while let n = stack.popLast() {
            nodes[n.index].subdirs.forEach { stack.append(NodeID($0)) }
            let files = nodes[n.index].files
            nodes[n.index].files = EntryTable()
            files.forEach { removeRecord(RecordID($0), unfile: false, stale: &stale) }
            let node = nodes[n.index]
            accounts[node.root.index].directoryBytes -= node.bytes
            if node.parent != .none { accounts[node.root.index].directories -= 1 }
            names.release(node.name)
            nodes[n.index] = DirectoryNode(parent: .none, root: node.root, name: .empty, ino: 0, bytes: 0, live: false)
            removedNodes.append(n)
        }
        compactNamesIfNeeded()
    }

    /// Takes a directory out of its parent's table (a rename whose destination is not known yet); its subtree
    /// stays counted.
    package mutating func detachDirectory(_ n: NodeID) {
        let parent = nodes[n.index].parent
        guard parent != .none else { return }
        let hash = names.hash(nodes[n.index].name)
        nodes[parent.index].subdirs.remove(n.raw, hash: hash)
    }

    /// Puts a detached directory under `parent` as `name` (same root), replacing what was there. Returns the
    /// names to stat again that what it replaced leaves behind (see `removeRecord`).
    package mutating func attachDirectory(_ n: NodeID, parent: NodeID, name: UnsafeRawBufferPointer) -> [RecordID] {
        var stale: [RecordID] = []
        if let existing = subdirectory(of: parent, named: name), existing != n {
            removeSubtree(existing, stale: &stale)
        }
        if let file = existingRecord(in: parent, named: name) { removeRecord(file, stale: &stale) }
        names.release(nodes[n.index].name)
        nodes[n.index].name = names.store(name)
        nodes[n.index].parent = parent
        fileSubdirectory(n, in: parent)
        return stale
    }

    private mutating func fileSubdirectory(_ n: NodeID, in parent: NodeID, hash: Int? = nil) {
        file(n.raw, hash: hash ?? names.hash(nodes[n.index].name), in: parent, .subdirs)
    }

    /// A directory's two tables.
    enum Table { case files, subdirs }

    /// Files `entry` (a record, or a node for `.subdirs`) under `hash` (of its name) in one of `dir`'s tables.
    /// The table is moved out while it changes, so growing it does not copy it.
    mutating func file(_ entry: UInt32, hash: Int, in dir: NodeID, _ which: Table) {
        var table = takeTable(which, of: dir)
        if table.needsGrowth { table.grow { nameHash($0, which) } }
        table.insert(entry, hash: hash)
        putTable(table, which, of: dir)
    }

    /// Makes room for `count` more entries in one of `dir`'s tables at once.
    mutating func reserve(_ count: Int, in dir: NodeID, _ which: Table) {
        var table = takeTable(which, of: dir)
        table.grow(reserving: count) { nameHash($0, which) }
        putTable(table, which, of: dir)
    }

    private func nameHash(_ entry: UInt32, _ which: Table) -> Int {
        names.hash(which == .subdirs ? nodes[Int(entry)].name : records[Int(entry)].name)
    }

    private mutating func takeTable(_ which: Table, of dir: NodeID) -> EntryTable {
        switch which {
        case .files: defer { nodes[dir.index].files = EntryTable() }; return nodes[dir.index].files
        case .subdirs: defer { nodes[dir.index].subdirs = EntryTable() }; return nodes[dir.index].subdirs
        }
    }

    private mutating func putTable(_ table: EntryTable, _ which: Table, of dir: NodeID) {
        switch which {
        case .files: nodes[dir.index].files = table
        case .subdirs: nodes[dir.index].subdirs = table
        }
    }

    // MARK: Walking and paths

    /// Calls `body` for `top` and every directory below it (parents before children).
    package func forEachNode(under top: NodeID, _ body: (NodeID) -> Void) {
        guard isLive(top) else { return }
        var stack = [top]
        while let n = stack.popLast() {
            body(n)
            nodes[n.index].subdirs.forEach { stack.append(NodeID($0)) }
        }
    }

    /// Calls `body` for every file record filed under `top`.
    package func forEachRecord(under top: NodeID, _ body: (RecordID) -> Void) {
        forEachNode(under: top) { n in nodes[n.index].files.forEach { body(RecordID($0)) } }
    }

    /// The directories from just below the root down to `n` (empty for the root itself).
    package func chain(of n: NodeID) -> [NodeID] {
        var chain: [NodeID] = []
        var i = n
        while i != .none, nodes[i.index].parent != .none {
            chain.append(i)
            i = nodes[i.index].parent
        }
        return chain.reversed()
    }

    /// Path of a directory relative to its root ("" for the root).
    package func relativePath(of n: NodeID) -> [UInt8] {
        var out: [UInt8] = []
        for (k, c) in chain(of: n).enumerated() {
            if k > 0 { out.append(PathBytes.separator) }
            names.append(nodes[c.index].name, to: &out)
        }
        return out
    }

    /// Absolute path of a directory (for messages).
    package func absolutePath(of n: NodeID) -> [UInt8] {
        let root = nodes[n.index].root
        return PathBytes.join(account(root)?.path ?? [], relativePath(of: n))
    }
}
