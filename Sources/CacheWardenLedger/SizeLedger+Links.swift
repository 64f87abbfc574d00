/// The shared state of an inode whose names are `linked`: counted once, however many names it has in the root.
struct LinkGroup: Equatable {
    var bytes: Int64
    var age: Int64
    var names: LinkNames
    var writing = false
    var openedAge = false
}

/// The names of a link group in one root: usually one (the other name lives outside the root), so the common
/// case allocates nothing.
enum LinkNames: Equatable {
    case one(RecordID)
    case many([RecordID])

    var count: Int {
        switch self {
        case .one: 1
        case .many(let all): all.count
        }
    }

    func forEach(_ body: (RecordID) -> Void) {
        switch self {
        case .one(let r): body(r)
        case .many(let all): all.forEach(body)
        }
    }

    var all: [RecordID] {
        switch self {
        case .one(let r): [r]
        case .many(let all): all
        }
    }

    mutating func add(_ r: RecordID) { self = .many(all + [r]) }

    /// Removes `r`; returns false when no name is left.
    mutating func remove(_ r: RecordID) -> Bool {
        var rest = all
        rest.removeAll { $0 == r }
        guard let first = rest.first else { return false }
        self = rest.count == 1 ? .one(first) : .many(rest)
        return true
    }
}

/// Hard links, in linear time. A name whose stat shows more than one link is filed in the root's link group for
/// its inode at once — so meeting an inode a second time is one dictionary look-up, never a scan of the ledger.
/// The one case a look-up cannot see is an inode that gained its second name after its first name was counted
/// inline; that needs the inline records by inode, which a root builds the first time it needs them (linear,
/// once) and keeps up to date from then on. The initial scan skips even that and merges such pairs in one pass
/// at its end (`mergeLinksFoundInline`).
extension SizeLedger {
    /// Counts record `r` (not counted yet) as a name of inode `s.ino`.
    mutating func attachInode(_ r: RecordID, _ s: FileStatus, keepOpenedAge: Bool) {
        let root = records[r.index].root
        records[r.index].ino = s.ino
        if accounts[root.index].links[s.ino] != nil {
            join(r, s, keepOpenedAge: keepOpenedAge)
        } else if s.links > 1 {
            if let other = inlineRecord(ino: s.ino, in: root, excluding: r) {
                convertToGroup(other)
                join(r, s, keepOpenedAge: keepOpenedAge)
            } else {
                accounts[root.index].links[s.ino] = LinkGroup(bytes: s.bytes, age: s.age, names: .one(r))
                noteSize(root, s.bytes)
                records[r.index].flags.insert(.linked)
                adjust(root, bytes: s.bytes, files: 1)
            }
        } else {
            setBytes(r, s.bytes)
            records[r.index].age = s.age
            records[r.index].flags.remove(.linked)
            adjust(root, bytes: s.bytes, files: 1)
            indexInline(r)
        }
    }

    /// Stops counting record `r`'s inode through this name; its bytes leave the total with its last name. The
    /// inode's other names go to `stale`, to be statted again.
    mutating func detachInode(_ r: RecordID, stale: inout [RecordID]) {
        let rec = records[r.index]
        guard rec.statted else { return }
        let root = rec.root
        if rec.linked {
            if var group = accounts[root.index].links[rec.ino] {
                if group.names.remove(r) {
                    accounts[root.index].links[rec.ino] = group
                    // A change made through this name just before it went (a truncate, then `rm`) reached the others.
                    group.names.forEach { stale.append($0) }
                } else {
                    accounts[root.index].links[rec.ino] = nil
                    adjust(root, bytes: -group.bytes, files: -1)
                }
                // So did it the names in other roots.
                restatOtherRoots(ino: rec.ino, except: root, stale: &stale)
            }
        } else {
            unindexInline(r)
            adjust(root, bytes: -bytes(of: r), files: -1)
            setBytes(r, 0)
        }
        records[r.index].ino = 0
        records[r.index].flags.subtract([.linked, .writing, .openedAge])
    }

    /// A new stat of a linked inode: its bytes and age, shared by all its names.
    mutating func updateGroup(_ s: FileStatus, root: RootID, keepOpenedAge: Bool) {
        guard var group = accounts[root.index].links[s.ino] else { return }
        noteSize(root, s.bytes)
        adjust(root, bytes: s.bytes - group.bytes)
        group.bytes = s.bytes
        let age = keepOpenedAge && group.openedAge ? max(group.age, s.age) : s.age // a write is a use too
        guard age != group.age else {
            accounts[root.index].links[s.ino] = group
            return
        }
        group.age = age
        setGroup(group, ino: s.ino, root: root)
    }

    /// Stores a group whose age changed. All its names' keys change at once, and fixing them in the heap one by
    /// one could leave one under another that moves later: they leave the heap first and come back after.
    mutating func setGroup(_ group: LinkGroup, ino: UInt64, root: RootID) {
        group.names.forEach { takeOutOfVictims($0) }
        accounts[root.index].links[ino] = group
        group.names.forEach { syncVictim($0) }
    }

    /// Adds `r` to the existing group of `s.ino`.
    private mutating func join(_ r: RecordID, _ s: FileStatus, keepOpenedAge: Bool) {
        let root = records[r.index].root
        guard var group = accounts[root.index].links[s.ino] else { return }
        group.names.add(r)
        accounts[root.index].links[s.ino] = group
        records[r.index].flags.insert(.linked)
        updateGroup(s, root: root, keepOpenedAge: keepOpenedAge)
    }

    /// Moves an inline record's state into a new link group of its inode (the count stays the same).
    private mutating func convertToGroup(_ r: RecordID) {
        let rec = records[r.index]
        unindexInline(r)
        let group = LinkGroup(
            bytes: bytes(of: r), age: rec.age, names: .one(r), writing: rec.flags.contains(.writing),
            openedAge: rec.flags.contains(.openedAge))
        accounts[rec.root.index].links[rec.ino] = group
        setBytes(r, 0)
        records[r.index].flags.insert(.linked)
        records[r.index].flags.subtract([.writing, .openedAge])
    }

    /// A hard-linked file changed (seen through a name in `root`): its names in the other roots on the same
    /// filesystem are statted again, since no change reaches their directories. (A change through a name outside
    /// every root is not seen at all: the README's limits.) They go to `stale`.
    mutating func restatOtherRoots(ino: UInt64, except root: RootID, stale: inout [RecordID]) {
        let dev = accounts[root.index].dev
        for other in accounts.indices
        where other != root.index && accounts[other].registered && accounts[other].dev == dev {
            if let group = accounts[other].links[ino] {
                group.names.forEach { stale.append($0) }
            } else if let r = inlineRecord(ino: ino, in: RootID(UInt32(other)), excluding: RecordID(UInt32.max)) {
                stale.append(r)
            }
        }
    }

    // MARK: Inline records by inode

    private static func inodeHash(_ ino: UInt64) -> Int {
        Int(truncatingIfNeeded: (ino &* 0x9E37_79B9_7F4A_7C15) >> 17)
    }

    /// An inline record of inode `ino` in `root`, other than `r`. Builds the root's inode index on first use.
    mutating func inlineRecord(ino: UInt64, in root: RootID, excluding r: RecordID) -> RecordID? {
        guard accounts[root.index].bulkLoading == false else { return nil }
        if accounts[root.index].inodes == nil { buildInodeIndex(root) }
        return accounts[root.index].inodes?.find(hash: Self.inodeHash(ino)) { candidate in
            candidate != r.raw && records[Int(candidate)].ino == ino && !records[Int(candidate)].linked
        }.map { RecordID($0) }
    }

    /// Record `r` was found under a new name with one link while another name of its inode is still counted
    /// (moved from a directory not re-read yet): that name is stale, and is returned to be statted again.
    package mutating func staleName(besides r: RecordID) -> RecordID? {
        let rec = records[r.index]
        guard rec.statted, !rec.linked else { return nil }
        return inlineRecord(ino: rec.ino, in: rec.root, excluding: r)
    }

    /// Built from the record slab, not the tree: a record held by a rename in flight is out of its directory's
    /// table but still counted, and must be found too.
    private mutating func buildInodeIndex(_ root: RootID) {
        var inline: [RecordID] = []
        for k in records.indices {
            let rec = records[k]
            if rec.live && rec.statted && !rec.linked && rec.rootIndex == UInt16(root.raw) {
                inline.append(RecordID(UInt32(k)))
            }
        }
        var table = EntryTable()
        table.grow(reserving: inline.count) { _ in 0 }
        for r in inline { table.insert(r.raw, hash: Self.inodeHash(records[r.index].ino)) }
        accounts[root.index].inodes = table
    }

    private mutating func indexInline(_ r: RecordID) {
        let root = records[r.index].root
        guard accounts[root.index].inodes != nil, var table = accounts[root.index].inodes else { return }
        accounts[root.index].inodes = nil // moved out, so growing it does not copy it
        if table.needsGrowth { table.grow { Self.inodeHash(records[Int($0)].ino) } }
        table.insert(r.raw, hash: Self.inodeHash(records[r.index].ino))
        accounts[root.index].inodes = table
    }

    private mutating func unindexInline(_ r: RecordID) {
        let root = records[r.index].root
        guard accounts[root.index].inodes != nil else { return }
        accounts[root.index].inodes?.remove(r.raw, hash: Self.inodeHash(records[r.index].ino))
    }

    /// End of the initial scan: an inode whose first name was statted with one link and a later one with two (a
    /// link made during the scan) is counted twice until merged here. One pass, only when the root has groups.
    mutating func mergeLinksFoundInline(_ root: RootID) {
        guard let account = account(root), !account.links.isEmpty else { return }
        var strays: [RecordID] = []
        forEachRecord(under: account.rootNode) { r in
            let rec = records[r.index]
            if rec.statted && !rec.linked && account.links[rec.ino] != nil { strays.append(r) }
        }
        for r in strays {
            // The group's stat is the later one: the stray joins it and its own (older) figures leave the total.
            let rec = records[r.index]
            guard var group = accounts[root.index].links[rec.ino] else { continue }
            adjust(root, bytes: -bytes(of: r), files: -1)
            setBytes(r, 0)
            records[r.index].flags.insert(.linked)
            records[r.index].flags.subtract([.writing, .openedAge])
            group.names.add(r)
            accounts[root.index].links[rec.ino] = group
        }
    }
}
