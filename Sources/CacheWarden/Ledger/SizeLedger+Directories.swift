/// Directories: filing subdirectories by name, renames of whole subtrees, removal, paths, and the one walk over
/// a subtree that every sweep uses.
extension SizeLedger {
    func isLive(_ n: NodeID) -> Bool { n.index < nodes.count && nodes[n.index].live }
    func node(_ n: NodeID) -> DirectoryNode { nodes[n.index] }
    func root(of n: NodeID) -> RootID { nodes[n.index].root }
    func parent(of n: NodeID) -> NodeID { nodes[n.index].parent }
    func isRoot(_ n: NodeID) -> Bool { nodes[n.index].parent == .none }
    func name(of n: NodeID) -> [UInt8] { names.copy(nodes[n.index].name) }

    /// The subdirectory `name` of `parent`, if the ledger has it.
    func subdirectory(of parent: NodeID, named name: UnsafeRawBufferPointer) -> NodeID? {
        let hash = NameArena.hash(name)
        return nodes[parent.index].subdirs.find(hash: hash) { names.equals(nodes[Int($0)].name, name) }
            .map { NodeID($0) }
    }

    /// Adds (or returns the existing) subdirectory `name` of `parent`. An existing entry with another inode was
    /// replaced on disk: its subtree goes. A file record of that name goes too (a directory took its place).
    mutating func addDirectory(parent: NodeID, name: UnsafeRawBufferPointer, ino: UInt64,
                               bytes: Int64 = 0) -> (node: NodeID, isNew: Bool) {
        if let existing = subdirectory(of: parent, named: name) {
            if nodes[existing.index].ino == ino { return (existing, false) }
            removeSubtree(existing)
        }
        if let file = existingRecord(in: parent, named: name) { removeRecord(file) }
        let root = nodes[parent.index].root
        let ref = names.store(name)
        let node = allocNode(DirectoryNode(parent: parent, root: root, name: ref, ino: ino, bytes: bytes))
        fileSubdirectory(node, in: parent)
        accounts[root.index]?.directoryBytes += bytes
        accounts[root.index]?.directories += 1
        return (node, true)
    }

    /// Sets a directory's own allocated bytes (after a stat of it).
    mutating func setDirectoryBytes(_ n: NodeID, _ bytes: Int64) {
        let root = nodes[n.index].root
        accounts[root.index]?.directoryBytes += bytes - nodes[n.index].bytes
        nodes[n.index].bytes = bytes
    }

    /// Removes a directory node, all below it, and their files from the totals; the removed nodes are listed in
    /// `removedNodes`.
    mutating func removeSubtree(_ top: NodeID) {
        guard isLive(top) else { return }
        detachDirectory(top)
        var stack = [top]
        while let n = stack.popLast() {
            nodes[n.index].subdirs.forEach { stack.append(NodeID($0)) }
            let files = nodes[n.index].files
            nodes[n.index].files = EntryTable()
            files.forEach { removeRecord(RecordID($0), unfile: false) }
            let node = nodes[n.index]
            accounts[node.root.index]?.directoryBytes -= node.bytes
            if node.parent != .none { accounts[node.root.index]?.directories -= 1 }
            names.release(node.name)
            nodes[n.index] = DirectoryNode(parent: .none, root: node.root, name: .empty, ino: 0, bytes: 0, live: false)
            removedNodes.append(n)
        }
        compactNamesIfNeeded()
    }

    /// Takes a directory out of its parent's table (a rename whose destination is not known yet); its subtree
    /// stays counted.
    mutating func detachDirectory(_ n: NodeID) {
        let parent = nodes[n.index].parent
        guard parent != .none else { return }
        let hash = names.hash(nodes[n.index].name)
        nodes[parent.index].subdirs.remove(n.raw, hash: hash)
    }

    /// Puts a detached directory under `parent` as `name` (same root), replacing what was there.
    mutating func attachDirectory(_ n: NodeID, parent: NodeID, name: UnsafeRawBufferPointer) {
        if let existing = subdirectory(of: parent, named: name), existing != n { removeSubtree(existing) }
        if let file = existingRecord(in: parent, named: name) { removeRecord(file) }
        names.release(nodes[n.index].name)
        nodes[n.index].name = names.store(name)
        nodes[n.index].parent = parent
        fileSubdirectory(n, in: parent)
    }

    private mutating func fileSubdirectory(_ n: NodeID, in parent: NodeID) {
        file(n.raw, in: parent, table: \.subdirs, reserving: 1)
    }

    /// Files `entry` (a record, or a node for `\.subdirs`) in one of `dir`'s tables by its name, making room for
    /// `reserving` entries. The table is moved out while it changes, so growing it does not copy it.
    mutating func file(_ entry: UInt32?, in dir: NodeID, table key: WritableKeyPath<DirectoryNode, EntryTable>, reserving: Int) {
        let isNodes = key == \DirectoryNode.subdirs
        func nameHash(_ e: UInt32) -> Int { names.hash(isNodes ? nodes[Int(e)].name : records[Int(e)].name) }
        var table = nodes[dir.index][keyPath: key]
        nodes[dir.index][keyPath: key] = EntryTable()
        if reserving > 1 || table.needsGrowth { table.grow(reserving: reserving, hashOf: nameHash) }
        if let entry { table.insert(entry, hash: nameHash(entry)) }
        nodes[dir.index][keyPath: key] = table
    }

    // MARK: Walking and paths

    /// Calls `body` for `top` and every directory below it (parents before children).
    func forEachNode(under top: NodeID, _ body: (NodeID) -> Void) {
        guard isLive(top) else { return }
        var stack = [top]
        while let n = stack.popLast() {
            body(n)
            nodes[n.index].subdirs.forEach { stack.append(NodeID($0)) }
        }
    }

    /// Calls `body` for every file record filed under `top`.
    func forEachRecord(under top: NodeID, _ body: (RecordID) -> Void) {
        forEachNode(under: top) { n in nodes[n.index].files.forEach { body(RecordID($0)) } }
    }

    /// The directories from just below the root down to `n` (empty for the root itself).
    func chain(of n: NodeID) -> [NodeID] {
        var chain: [NodeID] = []
        var i = n
        while i != .none, nodes[i.index].parent != .none {
            chain.append(i)
            i = nodes[i.index].parent
        }
        return chain.reversed()
    }

    /// Path of a directory relative to its root ("" for the root).
    func relativePath(of n: NodeID) -> [UInt8] {
        var out: [UInt8] = []
        for (k, c) in chain(of: n).enumerated() {
            if k > 0 { out.append(PathBytes.separator) }
            names.append(nodes[c.index].name, to: &out)
        }
        return out
    }

    /// Absolute path of a directory (for messages).
    func absolutePath(of n: NodeID) -> [UInt8] {
        let root = nodes[n.index].root
        return PathBytes.join(account(root)?.path ?? [], relativePath(of: n))
    }
}
