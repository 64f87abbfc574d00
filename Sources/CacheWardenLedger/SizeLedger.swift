/// What one stat said about a regular file, reduced to what the ledger counts.
package struct FileStatus: Equatable, Sendable {
    package var ino: UInt64
    /// Counted bytes under the size basis.
    package var bytes: Int64
    /// The age key (nanoseconds since 1970) under the directory's order.
    package var age: Int64
    /// `st_nlink`: more than 1 means other names may share these bytes.
    package var links: UInt32 = 1

    package init(ino: UInt64, bytes: Int64, age: Int64, links: UInt32 = 1) {
        self.ino = ino
        self.bytes = bytes
        self.age = age
        self.links = links
    }
}

/// One name of a regular file: 32 bytes with its size and age inline (no per-file object, no owned name — the
/// name lives in the `NameArena`). A name whose inode had more than one link when it was statted is `linked`: its
/// bytes and age then live in the root's `LinkGroup` for that inode, counted once however many names it has here.
/// The field order is the layout: 8 + 8 + 4 + 4 + 4 + 1 + 1 + 2 = 32 bytes, no padding (`LedgerLayoutTests`).
package struct FileRecord {
    /// 0 until the first stat of this name.
    package internal(set) var ino: UInt64 = 0
    /// Age key (inline files only).
    package internal(set) var age: Int64 = 0
    var nameOffset: UInt32
    /// The directory it is filed in (stale while the record is detached by a rename in flight).
    package internal(set) var dir: NodeID
    /// Counted bytes (inline files only); `UInt32.max` means "see `SizeLedger.bigSizes`".
    var size: UInt32 = 0
    var nameLength: UInt8
    var flags: RecordFlags
    /// The root it is counted in (kept here so that a detached record still knows it).
    var rootIndex: UInt16

    var name: NameRef {
        get { NameRef(offset: nameOffset, length: nameLength) }
        set { nameOffset = newValue.offset; nameLength = newValue.length }
    }
    package var root: RootID { RootID(UInt32(rootIndex)) }
    package var live: Bool { flags.contains(.live) }
    package var attached: Bool { flags.contains(.attached) }
    package var linked: Bool { flags.contains(.linked) }
    package var statted: Bool { ino != 0 }
}

struct RecordFlags: OptionSet {
    let rawValue: UInt8
    static let live = RecordFlags(rawValue: 1)
    /// In its directory's table (not while a rename is in flight).
    static let attached = RecordFlags(rawValue: 2)
    /// State lives in the root's link group for `ino`.
    static let linked = RecordFlags(rawValue: 4)
    /// Modified and not closed yet (inline files).
    static let writing = RecordFlags(rawValue: 8)
    /// The age key is an `IN_OPEN` time, kept across stats (order = opened; inline files).
    static let openedAge = RecordFlags(rawValue: 16)
}

/// A directory of a registered tree. Nodes live in a slab and refer to each other by `NodeID`.
package struct DirectoryNode {
    package internal(set) var parent: NodeID
    package internal(set) var root: RootID
    /// The entry name (empty for a root: its path is in its `RootAccount`).
    var name: NameRef
    package internal(set) var ino: UInt64
    /// The directory's own allocated bytes (counted only with `count_directories`).
    package internal(set) var bytes: Int64
    /// Records filed by name.
    package internal(set) var files = EntryTable()
    /// Subdirectory nodes filed by name.
    package internal(set) var subdirs = EntryTable()
    package internal(set) var live = true
    /// A backend watches it (a walker's watch was adopted, and no `watchLost` came since): a directory seen again
    /// needs no re-read then.
    package internal(set) var watched = false
}

/// The running totals of one registered root.
package struct RootAccount {
    package internal(set) var rootNode: NodeID
    /// The root's canonical absolute path.
    package internal(set) var path: [UInt8]
    package internal(set) var dev: UInt64
    /// Whether directories' own blocks are part of `total` (`count_directories`).
    package internal(set) var countsDirectories: Bool
    package internal(set) var fileBytes: Int64 = 0
    package internal(set) var directoryBytes: Int64 = 0
    /// Distinct regular files (inodes) counted.
    package internal(set) var files = 0
    /// File names (records), hard links included.
    package internal(set) var names = 0
    package internal(set) var directories = 0
    /// Inodes whose names are `linked`, by inode number.
    var links: [UInt64: LinkGroup] = [:]
    /// Inline records by inode, built the first time a new link group needs it (see `SizeLedger+Links`).
    var inodes: EntryTable?
    /// Whether the root keeps its files in oldest-first order (a victim heap).
    package internal(set) var ordered = false
    /// During the initial scan: order and hard-link merging are settled once, at the end.
    var bulkLoading = false
    /// The largest counted size seen in this root (an upper bound: it never shrinks), so the oversize rule can
    /// skip its pass over the files when no file can be larger than a trim's target.
    package internal(set) var largestSeen: Int64 = 0
    /// False for a slot whose root was removed (slots are not optional: updating a field of an optional struct in
    /// an array copies the whole struct out and back, on every file).
    var registered = true

    /// An unused slot.
    static let unused = RootAccount(rootNode: .none, path: [], dev: 0, countsDirectories: false, registered: false)

    /// What the root counts: its files, and its directories with `count_directories`.
    package var total: Int64 { countsDirectories ? fileBytes + directoryBytes : fileBytes }
}

/// The ledger of sizes: every directory of every registered tree, every regular file name, and per-root totals
/// kept exact by deltas (no rescans). Pure bookkeeping: it makes no system calls, so `SizeLedgerTests` drive it
/// with plain values and compare it with a dictionary model. Confined to the watcher's queue.
///
/// Its parts: directories and paths (`+Directories`), file names and stats (`+Files`), hard links
/// (`+Links`), and the oldest-first order that trims take victims from (`+Victims`).
package struct SizeLedger {
    var names = NameArena()
    var records: [FileRecord] = []
    var freeRecords: [RecordID] = []
    var nodes: [DirectoryNode] = []
    var freeNodes: [NodeID] = []
    var accounts: [RootAccount] = []
    /// Inline sizes that do not fit the record's 32-bit field (files of 4 GiB and more).
    var bigSizes: [RecordID: Int64] = [:]
    /// Per root: the victim heap (record IDs, oldest first); empty unless the root is `ordered`.
    var heaps: [[RecordID]] = []
    /// Per record: its index in its root's heap, or `notInHeap`.
    var heapPositions: [UInt32] = []
    static let notInHeap = UInt32.max
    /// Open files by name (see `+Opens`); only names open right now have an entry.
    var openCounts: [RecordID: UInt16] = [:]
    /// Each counted open, under the name it was opened by (see `+Opens`): as many entries per record as its count.
    var openedAs: [OpenName: [RecordID]] = [:]
    /// Nodes and records removed since the last `settle()`. Their slots are not reused before it, so an ID the
    /// updater or the backend still holds cannot come to mean another directory or file within one step.
    var removedNodes: [NodeID] = []
    var releasedRecords: [RecordID] = []

    package init() {}

    // MARK: Roots

    /// Creates the root node and account of root `id` at `path`.
    @discardableResult
    package mutating func addRoot(
        _ id: RootID, path: [UInt8], ino: UInt64, dev: UInt64, bytes: Int64 = 0,
        countsDirectories: Bool = false, ordered: Bool = false
    ) -> NodeID {
        precondition(id.raw < UInt32(UInt16.max), "at most 65,535 roots at once")
        while accounts.count <= id.index { accounts.append(.unused); heaps.append([]) }
        precondition(!accounts[id.index].registered, "\(id) is registered already")
        let node = allocNode(DirectoryNode(parent: .none, root: id, name: .empty, ino: ino, bytes: bytes))
        var account = RootAccount(rootNode: node, path: path, dev: dev, countsDirectories: countsDirectories)
        account.directoryBytes = bytes
        account.ordered = ordered
        accounts[id.index] = account
        return node
    }

    /// Removes a root and everything under it. Returns the names to stat again: those of its files' inodes in
    /// other roots.
    package mutating func removeRoot(_ id: RootID) -> [RecordID] {
        guard let account = account(id) else { return [] }
        let stale = removeSubtree(account.rootNode)
        accounts[id.index] = .unused
        heaps[id.index] = []
        return stale
    }

    package func account(_ id: RootID) -> RootAccount? { isRegistered(id) ? accounts[id.index] : nil }

    package func isRegistered(_ id: RootID) -> Bool { id.index < accounts.count && accounts[id.index].registered }

    /// The root's counted total (0 for an unknown root).
    package func total(_ id: RootID) -> Int64 { isRegistered(id) ? accounts[id.index].total : 0 }

    /// The registered roots, in ID order.
    package var rootIDs: [RootID] { accounts.indices.compactMap { accounts[$0].registered ? RootID(UInt32($0)) : nil } }

    /// Adds `delta` to the file bytes of `root`.
    /// Notes a counted size for `largestSeen`.
    mutating func noteSize(_ root: RootID, _ bytes: Int64) {
        if bytes > accounts[root.index].largestSeen { accounts[root.index].largestSeen = bytes }
    }

    mutating func adjust(_ root: RootID, bytes delta: Int64, files: Int = 0) {
        accounts[root.index].fileBytes += delta
        accounts[root.index].files += files
    }

    /// Ends a step: the slots of removed nodes and records become reusable. Returns them (the nodes' watches are
    /// to be dropped, and whoever holds their IDs must forget them).
    package mutating func settle() -> (nodes: [NodeID], records: [RecordID]) {
        defer {
            freeRecords.append(contentsOf: releasedRecords)
            releasedRecords.removeAll(keepingCapacity: true)
            freeNodes.append(contentsOf: removedNodes)
            removedNodes.removeAll(keepingCapacity: true)
        }
        return (removedNodes, releasedRecords)
    }

    // MARK: Bulk loading (the initial scan)

    /// Until `endBulkLoad`, files are counted without keeping their order or merging hard links across stats:
    /// both are settled once, in linear time, at the end.
    package mutating func beginBulkLoad(_ root: RootID) { accounts[root.index].bulkLoading = true }

    package mutating func endBulkLoad(_ root: RootID) {
        guard account(root)?.bulkLoading == true else { return }
        accounts[root.index].bulkLoading = false
        mergeLinksFoundInline(root)
        if account(root)?.ordered == true { rebuildHeap(root) }
    }

    // MARK: Slabs

    mutating func allocNode(_ n: DirectoryNode) -> NodeID {
        if let id = freeNodes.popLast() { nodes[id.index] = n; return id }
        nodes.append(n)
        return NodeID(UInt32(nodes.count - 1))
    }

    mutating func allocRecord(_ r: FileRecord) -> RecordID {
        if let id = freeRecords.popLast() { records[id.index] = r; return id }
        records.append(r)
        return RecordID(UInt32(records.count - 1))
    }

    /// Rebuilds the name arena when released names outweigh live ones (renames and deletions leave holes):
    /// linear in the live names, run at most once per doubling of the holes.
    mutating func compactNamesIfNeeded() {
        if names.wasted > max(1 << 20, names.liveBytes) { compactNames() }
    }

    /// Rebuilds the name arena with the live names only.
    mutating func compactNames() {
        var fresh = NameArena()
        for i in records.indices where records[i].live {
            records[i].name = names.withName(records[i].name) { fresh.store($0) }
        }
        for i in nodes.indices where nodes[i].live {
            nodes[i].name = names.withName(nodes[i].name) { fresh.store($0) }
        }
        names = fresh
    }
}
