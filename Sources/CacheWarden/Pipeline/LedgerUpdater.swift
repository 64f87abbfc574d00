import CacheWardenLedger
import CacheWardenFilesystem
import OrderedCollections

/// A directory's entry by name: a subdirectory that appeared and is still to be read.
struct DirectoryName: Hashable {
    var parent: NodeID
    var name: [UInt8]
}

/// A rename half seen (`movedFrom`) and waiting for its `movedTo`: the entry is out of its directory's table but
/// still counted.
enum PendingMove {
    case file(RecordID)
    case directory(NodeID, root: RootID)
}

/// What a batch saw about one file, decided when it is statted at the end of the batch.
struct DirtyFlags: OptionSet {
    let rawValue: UInt8
    static let modified = DirtyFlags(rawValue: 1)
    static let closed = DirtyFlags(rawValue: 2)
    static let movedIn = DirtyFlags(rawValue: 4)
    /// The name appeared (`created`): if its stat shows more than one link, it came by `link(2)`.
    static let created = DirtyFlags(rawValue: 8)
    /// A backend asked to look at the name again (`recheck`): found, it is counted; missing, nothing is suspected.
    static let recheck = DirtyFlags(rawValue: 16)
}

/// The ledger updater: applies a backend's changes to the ledger. Changes only adjust structure (names, renames,
/// removals) as they come; every file a batch touched is then statted once at the end of the batch
/// (`+Stats`), so a file written with a thousand `write(2)` calls costs one stat, not a thousand. Stats are the
/// truth: a name that vanished before its stat is dropped, and the changes that follow put it back where it went.
struct LedgerUpdater {
    let scanner: TreeScanner
    /// Renames waiting for their partner, by token.
    var pendingMoves: [MoveToken: PendingMove] = [:]
    /// Records to stat at the end of the batch, in first-seen order, with what was seen.
    var dirty: OrderedDictionary<RecordID, DirtyFlags> = [:]
    /// What changed since the engine last took it (`take()`).
    var delta = LedgerDelta()
    /// Directories whose own size may have changed (entries added or removed), for `count_directories`.
    var dirtyDirectories = Set<NodeID>()
    /// Directories that appeared (created or moved in), read once at the end of the batch (`retryUnread`), and
    /// those that could not be opened then (their parent was renamed, its changes still queued), read after the
    /// next. Reading at the end, by name, makes a name that comes and goes many times in one batch cost one read
    /// at most: a folder swapped in and out of a root hundreds of times a second (`renameat2`'s exchange) would
    /// otherwise be read whole for each swap, and the backlog would hold every trim back long after the storm.
    var appearing: OrderedDictionary<DirectoryName, RootID> = [:]
    /// Directory nodes that could not be read yet for the same reason.
    var unread = Set<NodeID>()

    /// Files a scan of a new directory announced with a `write` line (and the status it saw), in the last
    /// `announcementBatches` batches at least and twice that at most: a writer that created one before the
    /// directory's watch existed and closes it after brings its close a few batches later — behind whatever the
    /// kernel had queued before it, up to a batch's worth each time — and that close is not a second write.
    var announced: [RecordID: FileStatus] = [:]
    var announcedBefore: [RecordID: FileStatus] = [:]
    private var batchesSinceAnnouncing = 0
    static let announcementBatches = 8

    /// Names the ledger answered a change with, to be statted again (the other names of an inode that lost one,
    /// or whose stat moved): marked dirty when the updater next stats files (this batch's stats if they are still
    /// to come, else the next).
    var staleNames: [RecordID] = []

    /// Closes that matched no counted open in this batch, and in the one before (see `retryCloses`).
    var unmatchedCloses: [OpenName] = []
    var deferredCloses: [OpenName] = []
    static let maxDeferredCloses = 4096

    init(scanner: TreeScanner) { self.scanner = scanner }

    /// Applies one batch of changes, then stats what it touched; returns what changed.
    mutating func apply(_ batch: ChangeBatch, _ state: inout PipelineState) -> LedgerDelta {
        for change in batch.changes { route(change, batch, &state) }
        retryCloses(&state)
        retryUnread(&state)
        statDirtyFiles(&state)
        statDirtyDirectories(&state)
        batchesSinceAnnouncing += 1
        if batchesSinceAnnouncing >= Self.announcementBatches {
            // The older generation's table becomes the new one, emptied but kept: a writer filling new folders
            // announces thousands of files a generation, and a fresh table regrew (and rehashed) from nothing.
            swap(&announced, &announcedBefore)
            announced.removeAll(keepingCapacity: true)
            batchesSinceAnnouncing = 0
        }
        return take()
    }

    /// Stats `records` again now (files a trim found changed on disk); returns what changed.
    mutating func restat(_ records: [RecordID], _ state: inout PipelineState) -> LedgerDelta {
        for r in records where state.ledger.isLive(r) { markDirty(r, []) }
        statDirtyFiles(&state)
        return take()
    }

    /// Stats every file of `roots` again (an audit: bytes and ages are refreshed in place); returns what changed.
    mutating func audit(_ roots: [RootID], _ state: inout PipelineState) -> LedgerDelta {
        for id in roots { restatAll(id, state.ledger) }
        if !roots.isEmpty { statDirtyFiles(&state) }
        return take()
    }

    /// (Re)builds root `id` from disk (`TreeScanner.scanRoot`), keeping the names the ledger said to stat again.
    mutating func scanRoot(
        _ id: RootID, ordered: Bool, folder: OwnedDescriptor, _ state: inout PipelineState
    ) -> TreeScanner.Outcome {
        let outcome = scanner.scanRoot(id, ordered: ordered, folder: folder, &state)
        statAgain(outcome.stale)
        return outcome
    }

    /// Drops root `id` from the ledger; the names of its files' inodes in other roots are statted again.
    mutating func removeRoot(_ id: RootID, _ state: inout PipelineState) {
        statAgain(state.ledger.removeRoot(id))
    }

    /// What changed since the last call; the updater starts a new delta.
    mutating func take() -> LedgerDelta {
        defer { delta = LedgerDelta() }
        return delta
    }

    /// Forgets everything in flight (after an overflow, the trees are re-read). Entries held by a rename in flight
    /// are out of their directories' tables, where a re-read of the root cannot reach them: they go first.
    mutating func reset(_ state: inout PipelineState) {
        for move in pendingMoves.values {
            switch move {
            case .file(let r): statAgain(state.ledger.removeRecord(r))
            case .directory(let n, _): statAgain(state.ledger.removeSubtree(n))
            }
        }
        pendingMoves.removeAll()
        dirty.removeAll()
        appearing.removeAll()
        unread.removeAll()
        announced.removeAll()
        announcedBefore.removeAll()
        batchesSinceAnnouncing = 0
        unmatchedCloses.removeAll()
        deferredCloses.removeAll()
    }

    /// Drops what the updater holds about nodes and records whose slots `settle()` just freed, so that an ID it
    /// keeps across steps (a rename in flight, a retry) can never come to mean another directory or file.
    mutating func forget(nodes: Set<NodeID>, records: Set<RecordID>) {
        guard !nodes.isEmpty || !records.isEmpty else { return }
        pendingMoves = pendingMoves.filter { _, move in
            switch move {
            case .file(let r): !records.contains(r)
            case .directory(let n, _): !nodes.contains(n)
            }
        }
        if !dirty.isEmpty { for r in records { dirty[r] = nil } }
        if !staleNames.isEmpty { staleNames.removeAll { records.contains($0) } }
        if !announced.isEmpty || !announcedBefore.isEmpty {
            for r in records { announced[r] = nil; announcedBefore[r] = nil }
        }
        unread.subtract(nodes)
        if !nodes.isEmpty {
            unmatchedCloses.removeAll { nodes.contains($0.dir) }
            deferredCloses.removeAll { nodes.contains($0.dir) }
        }
        if !appearing.isEmpty { appearing.removeAll { nodes.contains($0.key.parent) } }
        dirtyDirectories.subtract(nodes)
    }

    mutating func markDirty(_ r: RecordID, _ flags: DirtyFlags) {
        dirty[r, default: []].formUnion(flags)
    }

    /// Keeps names the ledger said to stat again (`staleNames`).
    mutating func statAgain(_ records: [RecordID]) { staleNames.appendIfAny(records) }

    private mutating func route(_ c: Change, _ batch: ChangeBatch, _ state: inout PipelineState) {
        switch c.kind {
        case .overflow: delta.overflowed = true; return
        case .opensLost: state.ledger.forgetOpens(); return
        case .moveAbandoned: finishMove(c.move, &state); return
        case .rescan: rescan(c.node, &state); return
        case .watchLost, .directoryGone:
            if c.kind == .watchLost { state.ledger.setWatched(c.node, false) }
            if state.ledger.isLive(c.node), state.ledger.isRoot(c.node) {
                delta.lostRoots.append(
                    (
                        state.ledger.root(of: c.node),
                        c.kind == .watchLost ? "its watch was removed" : "it was deleted or moved away"
                    ))
            }
            return
        default: break
        }
        // A rename's second half that lands nowhere we count (an excluded name, a directory that went, a root
        // that went) settles its first half as a move out: left pending, the entry would stay counted for good.
        guard c.hasName, state.ledger.isLive(c.node), let rt = state.roots[state.ledger.root(of: c.node)] else {
            if c.kind == .movedTo { finishMove(c.move, &state) }
            return
        }
        let root = rt.id
        // CacheWarden's own trash at the top of a root is never counted (moves into it are moves out of the root).
        if state.ledger.isRoot(c.node), batch.withName(c, TrashFolder.isTrashName) {
            if c.kind == .movedTo { finishMove(c.move, &state) }
            // The root's own size holds the name (tmpfs counts 20 bytes a name).
            if rt.settings.countDirectories, [.created, .deleted, .movedFrom, .movedTo].contains(c.kind) {
                dirtyDirectories.insert(c.node)
            }
            return
        }
        if !rt.exclude.isEmpty,
            rt.exclude.matches(PathBytes.join(state.ledger.relativePath(of: c.node), batch.name(c)))
        {
            if c.kind == .movedTo { finishMove(c.move, &state) }
            return
        }
        if !isOwnLockOpen(c, rt, batch, state.ledger) { delta.active.insert(root) }
        if rt.settings.countDirectories,
            c.kind == .created || c.kind == .deleted || c.kind == .movedFrom || c.kind == .movedTo
        {
            dirtyDirectories.insert(c.node)
        }
        batch.withName(c) { name in
            if c.isDirectory {
                routeDirectory(c, name, root: root, &state)
            } else {
                routeFile(c, name, root: root, &state)
            }
        }
    }

    /// Whether `c` opens or closes one of the root's client lock files: no activity (it keeps no `trim_after_idle`
    /// from elapsing), since each try of a trim opens them itself, read-write where it may, and inotify cannot tell
    /// whose open it saw. A client's work in the cache is more than a lock: its writes are activity.
    private func isOwnLockOpen(_ c: Change, _ rt: RootRuntime, _ batch: ChangeBatch, _ ledger: SizeLedger) -> Bool {
        guard !rt.lockFiles.isEmpty, !c.isDirectory, [.opened, .closed, .closedAfterWrite].contains(c.kind) else {
            return false
        }
        return rt.lockFiles.matches(PathBytes.join(ledger.relativePath(of: c.node), batch.name(c)))
    }

    private mutating func routeFile(
        _ c: Change, _ name: UnsafeRawBufferPointer, root: RootID, _ state: inout PipelineState
    ) {
        let dir = c.node
        switch c.kind {
        case .created: markDirty(state.ledger.record(in: dir, named: name).record, .created)
        case .recheck: markDirty(state.ledger.record(in: dir, named: name).record, .recheck)
        case .modified: markDirty(state.ledger.record(in: dir, named: name).record, .modified)
        case .closedAfterWrite:
            markDirty(state.ledger.record(in: dir, named: name).record, .closed)
        case .attributes:
            if let r = state.ledger.existingRecord(in: dir, named: name) { markDirty(r, []) }
        case .deleted:
            if let r = state.ledger.existingRecord(in: dir, named: name) {
                noteUnseen(r, state.ledger)
                statAgain(state.ledger.removeRecord(r))
                delta.touched.insert(root)
            }
        case .movedFrom:
            if let r = state.ledger.existingRecord(in: dir, named: name) {
                state.ledger.detachRecord(r)
                pendingMoves[c.move] = .file(r)
            }
        case .movedTo: fileMovedIn(c, name, root: root, &state)
        case .opened:
            guard let r = state.ledger.existingRecord(in: dir, named: name), let settings = state.roots[root]?.settings
            else { return }
            if settings.spareOpen { state.ledger.noteOpened(r, as: OpenName(dir: dir, name: Array(name))) }
            if settings.order == .opened { state.ledger.markOpened(r, time: state.clock.fileTimeNanoseconds) }
        case .closed:
            guard state.roots[root]?.settings.spareOpen == true else { return }
            let key = OpenName(dir: dir, name: Array(name))
            if !state.ledger.noteClosed(key, current: state.ledger.existingRecord(in: dir, named: name)),
                unmatchedCloses.count < Self.maxDeferredCloses
            {
                unmatchedCloses.append(key)
            }
        default: break
        }
    }

    private mutating func fileMovedIn(
        _ c: Change, _ name: UnsafeRawBufferPointer, root: RootID, _ state: inout PipelineState
    ) {
        if case .file(let r)? = pendingMoves.removeValue(forKey: c.move), state.ledger.isLive(r) {
            let fromRoot = state.ledger.root(ofRecord: r)
            if fromRoot == root {
                statAgain(state.ledger.attachRecord(r, dir: c.node, name: name))
                markDirty(r, .movedIn)
                return
            }
            // Between two roots: the bytes leave one total, and the file is counted afresh in the other.
            statAgain(state.ledger.removeRecord(r))
            delta.touched.insert(fromRoot)
        }
        if let old = state.ledger.existingRecord(in: c.node, named: name) { statAgain(state.ledger.removeRecord(old)) }
        markDirty(state.ledger.record(in: c.node, named: name).record, .movedIn)
    }

    private mutating func routeDirectory(
        _ c: Change, _ name: UnsafeRawBufferPointer, root: RootID, _ state: inout PipelineState
    ) {
        let existing = state.ledger.subdirectory(of: c.node, named: name)
        let key = DirectoryName(parent: c.node, name: Array(name))
        switch c.kind {
        case .created, .recheck: appearing[key] = root
        case .deleted:
            if let existing { removeDirectory(existing, &state) } else { appearing[key] = nil }
        case .movedFrom:
            if let existing {
                state.ledger.detachDirectory(existing)
                pendingMoves[c.move] = .directory(existing, root: root)
            } else {
                appearing[key] = nil // came and went before it was read
            }
        case .movedTo:
            if case .directory(let moved, let fromRoot)? = pendingMoves.removeValue(forKey: c.move) {
                if fromRoot == root && state.ledger.isLive(moved) {
                    statAgain(state.ledger.attachDirectory(moved, parent: c.node, name: name))
                    delta.touched.insert(root)
                    return
                }
                // Between two roots: the bytes leave one total and the subtree is read into the other.
                removeDirectory(moved, &state)
            }
            appearing[key] = root
        default: break
        }
    }

    /// A record about to go: if it was never statted and never closed after writing, it may have been a hard link
    /// to a file counted under another name (`LedgerDelta.suspects`).
    mutating func noteUnseen(_ r: RecordID, _ ledger: SizeLedger) {
        guard !ledger.record(r).statted, !(dirty[r]?.contains(.closed) ?? false) else { return }
        delta.suspects.insert(ledger.root(ofRecord: r))
    }

    /// Queues every file of `root` for a stat (an audit): bytes and ages are refreshed in place.
    mutating func restatAll(_ root: RootID, _ ledger: SizeLedger) {
        guard let top = ledger.account(root)?.rootNode else { return }
        ledger.forEachRecord(under: top) { markDirty($0, []) }
    }

    mutating func removeDirectory(_ n: NodeID, _ state: inout PipelineState) {
        guard state.ledger.isLive(n) else { return }
        delta.touched.insert(state.ledger.root(of: n))
        statAgain(state.ledger.removeSubtree(n))
    }

    /// A rename whose partner never came: the entry moved out of every watched tree.
    private mutating func finishMove(_ token: MoveToken, _ state: inout PipelineState) {
        switch pendingMoves.removeValue(forKey: token) {
        case .file(let r)?:
            guard state.ledger.isLive(r) else { return }
            noteUnseen(r, state.ledger)
            delta.touched.insert(state.ledger.root(ofRecord: r))
            statAgain(state.ledger.removeRecord(r))
        case .directory(let n, _)?:
            removeDirectory(n, &state)
        case nil:
            break
        }
    }
}
