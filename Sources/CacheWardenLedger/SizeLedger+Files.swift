/// A read-only view of a file's counted state, wherever it is stored (inline or in a link group).
package struct InodeState: Equatable {
    package internal(set) var bytes: Int64
    package internal(set) var age: Int64
    /// Names of this inode in the root.
    package internal(set) var names: Int
    package internal(set) var writing: Bool
}

/// File names: filing by name, stats, renames, removal.
extension SizeLedger {
    package func record(_ r: RecordID) -> FileRecord { records[r.index] }
    package func isLive(_ r: RecordID) -> Bool { r.index < records.count && records[r.index].live }
    package func root(ofRecord r: RecordID) -> RootID { records[r.index].root }
    package func name(ofRecord r: RecordID) -> [UInt8] { names.copy(records[r.index].name) }

    /// Calls `body` with the bytes of `r`'s name, without copying them out of the arena.
    package func withName<R>(ofRecord r: RecordID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try names.withName(records[r.index].name, body)
    }

    /// Appends `r`'s name to `out` (a path being built).
    package func appendName(ofRecord r: RecordID, to out: inout [UInt8]) {
        names.append(records[r.index].name, to: &out)
    }

    /// Path of a file relative to its root.
    package func relativePath(ofRecord r: RecordID) -> [UInt8] {
        var path = relativePath(of: records[r.index].dir)
        if !path.isEmpty { path.append(PathBytes.separator) }
        names.append(records[r.index].name, to: &path)
        return path
    }

    /// The record of `name` in `dir`, if any.
    package func existingRecord(in dir: NodeID, named name: UnsafeRawBufferPointer, hash: Int? = nil) -> RecordID? {
        nodes[dir.index].files.find(hash: hash ?? NameArena.hash(name)) { names.equals(records[Int($0)].name, name) }
            .map { RecordID($0) }
    }

    /// The record of `name` in `dir`, created (not counted until its first stat) when missing. The name is hashed
    /// once for the look-up and the filing.
    package mutating func record(in dir: NodeID, named name: UnsafeRawBufferPointer) -> (record: RecordID, isNew: Bool)
    {
        let hash = NameArena.hash(name)
        if let r = existingRecord(in: dir, named: name, hash: hash) { return (r, false) }
        let root = nodes[dir.index].root
        let ref = names.store(name)
        let r = allocRecord(
            FileRecord(
                nameOffset: ref.offset, dir: dir, nameLength: ref.length,
                flags: [.live, .attached], rootIndex: UInt16(root.raw)))
        file(r.raw, hash: hash, in: dir, .files)
        accounts[root.index].names += 1
        return (r, true)
    }

    /// Applies a fresh stat of a record's name: files it under the right inode and updates bytes and age.
    /// `keepOpenedAge` keeps an `IN_OPEN` time as the age key (order = opened). Returns the names to stat again:
    /// the file's names in other roots when this stat changed what is known of it, and the names of an inode
    /// this name no longer counts (see `removeRecord`).
    package mutating func apply(_ s: FileStatus, to r: RecordID, keepOpenedAge: Bool) -> [RecordID] {
        let rec = records[r.index]
        guard rec.live else { return [] }
        var stale: [RecordID] = []
        if s.links > 1 {
            // A file with names in other roots too: when this stat changes what is known of it, they hear of it.
            let before = inode(ofRecord: r)
            applyStat(s, to: r, keepOpenedAge: keepOpenedAge, stale: &stale)
            if let after = inode(ofRecord: r), before?.bytes != after.bytes || before?.age != after.age {
                restatOtherRoots(ino: s.ino, except: rec.root, stale: &stale)
            }
        } else {
            applyStat(s, to: r, keepOpenedAge: keepOpenedAge, stale: &stale)
        }
        return stale
    }

    private mutating func applyStat(_ s: FileStatus, to r: RecordID, keepOpenedAge: Bool, stale: inout [RecordID]) {
        let rec = records[r.index]
        if rec.statted && (rec.ino != s.ino || (!rec.linked && s.links > 1)) {
            // Another inode under this name, or this inode gained a name: count it afresh. Its heap key changes
            // with it, so it leaves the heap first (a group it joins reorders its other names meanwhile).
            takeOutOfVictims(r)
            detachInode(r, stale: &stale)
        }
        if !records[r.index].statted {
            attachInode(r, s, keepOpenedAge: keepOpenedAge)
            syncVictim(r)
            return
        }
        let root = rec.root
        if rec.linked {
            updateGroup(s, root: root, keepOpenedAge: keepOpenedAge)
            return
        }
        adjust(root, bytes: s.bytes - bytes(of: r))
        setBytes(r, s.bytes)
        // A write is a use too: an open time older than the file's mtime gives way to it (the deleter's re-check
        // refuses a file whose mtime is newer than its age, and would otherwise refuse it until its next open).
        let age = keepOpenedAge && rec.flags.contains(.openedAge) ? max(rec.age, s.age) : s.age
        if age != rec.age {
            records[r.index].age = age
            syncVictim(r)
        }
    }

    /// Counted bytes of an inline record.
    package func bytes(of r: RecordID) -> Int64 {
        let size = records[r.index].size
        return size == UInt32.max ? bigSizes[r] ?? 0 : Int64(size)
    }

    mutating func setBytes(_ r: RecordID, _ bytes: Int64) {
        noteSize(records[r.index].root, bytes)
        if bytes >= Int64(UInt32.max) {
            records[r.index].size = UInt32.max
            bigSizes[r] = bytes
        } else {
            if records[r.index].size == UInt32.max { bigSizes[r] = nil }
            records[r.index].size = UInt32(bytes)
        }
    }

    /// What deleting this name frees: its file's bytes when it is the file's last name here, else nothing yet (0
    /// also before its first stat).
    package func freedBytes(ofRecord r: RecordID) -> Int64 {
        guard let inode = inode(ofRecord: r) else { return 0 }
        return inode.names <= 1 ? inode.bytes : 0
    }

    /// The counted state of a record's file (`nil` before its first stat).
    package func inode(ofRecord r: RecordID) -> InodeState? {
        let rec = records[r.index]
        guard rec.statted, rec.live else { return nil }
        if rec.linked, let g = accounts[rec.root.index].links[rec.ino] {
            return InodeState(bytes: g.bytes, age: g.age, names: g.names.count, writing: g.writing)
        }
        return InodeState(bytes: bytes(of: r), age: rec.age, names: 1, writing: rec.flags.contains(.writing))
    }

    /// Removes a file name; its inode's bytes leave the total with its last name. Returns the names to stat
    /// again: the inode's other names, here and in other roots, which a change made through this one just before
    /// it went (a truncate, then `rm`) reached too. The ledger cannot stat; whoever removed the name does.
    package mutating func removeRecord(_ r: RecordID) -> [RecordID] {
        var stale: [RecordID] = []
        removeRecord(r, stale: &stale)
        return stale
    }

    /// `unfile: false` skips taking the name out of its directory's table (the caller drops the whole table).
    mutating func removeRecord(_ r: RecordID, unfile: Bool = true, stale: inout [RecordID]) {
        let rec = records[r.index]
        guard rec.live else { return }
        if unfile && rec.attached { unfileRecord(r) }
        records[r.index].flags.remove(.attached)
        syncVictim(r)
        detachInode(r, stale: &stale)
        accounts[rec.root.index].names -= 1
        if !openCounts.isEmpty, openCounts.removeValue(forKey: r) != nil { dropOpenedAs(r, all: true) }
        names.release(rec.name)
        records[r.index].flags = []
        releasedRecords.append(r)
    }

    /// Takes a file name out of its directory's table, keeping its bytes counted (a rename in flight).
    package mutating func detachRecord(_ r: RecordID) {
        guard records[r.index].live, records[r.index].attached else { return }
        unfileRecord(r)
        records[r.index].flags.remove(.attached)
        syncVictim(r)
    }

    /// Puts a detached record at `dir/name` within the same root, replacing what was there. Returns the names to
    /// stat again that what it replaced leaves behind (see `removeRecord`).
    package mutating func attachRecord(_ r: RecordID, dir: NodeID, name: UnsafeRawBufferPointer) -> [RecordID] {
        precondition(nodes[dir.index].root == records[r.index].root, "a record moves between roots as remove + add")
        var stale: [RecordID] = []
        if let existing = existingRecord(in: dir, named: name), existing != r { removeRecord(existing, stale: &stale) }
        if let sub = subdirectory(of: dir, named: name) { removeSubtree(sub, stale: &stale) }
        if records[r.index].attached { unfileRecord(r) }
        names.release(records[r.index].name)
        records[r.index].name = names.store(name)
        records[r.index].dir = dir
        records[r.index].flags.insert(.attached)
        fileRecord(r, in: dir)
        syncVictim(r)
        compactNamesIfNeeded()
        return stale
    }

    /// Records an `IN_OPEN` at `time` (nanoseconds): for `order = opened` the file's age key becomes `time`, or
    /// stays where it is if that is later (the coarse clock of `time` can be behind the file's own mtime).
    package mutating func markOpened(_ r: RecordID, time: Int64) {
        let rec = records[r.index]
        guard rec.live, rec.statted else { return }
        if rec.linked, var g = accounts[rec.root.index].links[rec.ino] {
            g.openedAge = true
            g.age = max(g.age, time)
            setGroup(g, ino: rec.ino, root: rec.root)
        } else {
            records[r.index].flags.insert(.openedAge)
            records[r.index].age = max(rec.age, time)
            syncVictim(r)
        }
    }

    /// Marks a file as being written (modified, not closed) or not.
    package mutating func setWriting(_ r: RecordID, _ writing: Bool) {
        let rec = records[r.index]
        guard rec.live, rec.statted else { return }
        if rec.linked, accounts[rec.root.index].links[rec.ino] != nil {
            accounts[rec.root.index].links[rec.ino]?.writing = writing
        } else if writing {
            records[r.index].flags.insert(.writing)
        } else {
            records[r.index].flags.remove(.writing)
        }
    }

    // MARK: Filing

    private mutating func fileRecord(_ r: RecordID, in dir: NodeID) {
        file(r.raw, hash: names.hash(records[r.index].name), in: dir, .files)
    }

    private mutating func unfileRecord(_ r: RecordID) {
        let rec = records[r.index]
        nodes[rec.dir.index].files.remove(r.raw, hash: names.hash(rec.name))
    }

    /// Makes room for `count` more records in `dir`'s table at once (the initial scan knows each directory's size).
    package mutating func reserveRecords(_ count: Int, in dir: NodeID) {
        reserve(count, in: dir, .files)
    }
}
