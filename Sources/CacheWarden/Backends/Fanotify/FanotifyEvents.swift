import CFanotify
import CacheWardenLedger

/// Turns decoded fanotify events into `Change`s about the directories the backend follows; events about any other
/// directory of a marked filesystem are dropped here, by one hash lookup of their directory key.
///
/// fanotify merges a new event into any queued event about the same name in the same directory by the same
/// process (up to 128 back), OR-ing their bits: the order inside one event is lost, and an event can be queued
/// before one that happened earlier. Hence: a name both created and deleted is given as deleted, then created (the
/// updater's `lstat` of the name then finds what is there, whichever came last); a rename is followed by a look at
/// its old name (a file made there again after the rename merged into an earlier event about that name, queued
/// before the rename); an open and a close of a file in one event of the opens group count as an open that ended (a
/// close and a reopen merged the other way round would leave the file counted as closed — the one inexactness of
/// opens).
struct FanotifyEvents {
    /// The followed directories' nodes, found by key: an `EntryTable` of node indices hashed by key, whose keys
    /// live in `followed`. A `Dictionary<DirectoryKey, NodeID>` held every key a second time (~85 bytes a
    /// directory, where the table and `hashes` take ~13 and the stored hash 8 more) and hashed it again on each
    /// lookup and each growth.
    private var table = EntryTable()
    /// The key of each followed node and whether its root tracks opens, by node index: nodes are dense indices
    /// into the ledger's table.
    private var followed: [Followed?] = []
    /// Each followed node's key hash, by node index: what a probe of `table` compares first. Reading it copies
    /// nothing, where reading a `Followed` copies its key (and retains a long key's array).
    private var hashes: [Int] = []
    private var nextMove: UInt32 = 0
    /// The last key an event named and the node it found, or nil: events come directory by directory (a writer
    /// fills one folder, then the next), so most name the directory the one before named, and are answered by
    /// comparing bytes, without hashing and probing. Forgotten by every bind and unbind.
    private var recent: (key: DirectoryKey, node: NodeID?)?

    private struct Followed {
        var key: DirectoryKey
        var opens: Bool
    }

    /// Directories followed.
    var count: Int { table.count }

    private func following(_ node: NodeID) -> Followed? { node.index < followed.count ? followed[node.index] : nil }

    /// Whether `node` is followed with its opens reported.
    func tracksOpens(_ node: NodeID) -> Bool { following(node)?.opens == true }

    /// The node followed under `key`, if any.
    func node(for key: DirectoryKey) -> NodeID? {
        table.find(hash: key.hash) { hashes[Int($0)] == key.hash && followed[Int($0)]?.key == key }.map(NodeID.init)
    }

    /// Follows `node` by `key`; returns the node that had the key before, if another (the same directory under an
    /// old name whose rename was not seen).
    mutating func bind(_ key: DirectoryKey, opens tracksOpens: Bool, to node: NodeID) -> NodeID? {
        recent = nil
        let other = self.node(for: key)
        if other == node {
            followed[node.index]!.opens = tracksOpens
            return nil
        }
        if let other { unbind(other) }
        unbind(node)
        if node.index >= followed.count {
            followed += repeatElement(nil, count: node.index + 1 - followed.count)
            hashes += repeatElement(0, count: node.index + 1 - hashes.count)
        }
        followed[node.index] = Followed(key: key, opens: tracksOpens)
        hashes[node.index] = key.hash
        if table.needsGrowth { table.grow { hashes[Int($0)] } }
        table.insert(node.raw, hash: key.hash)
        return other
    }

    mutating func unbind(_ node: NodeID) {
        recent = nil
        guard node.index < followed.count, followed[node.index] != nil else { return }
        table.remove(node.raw, hash: hashes[node.index])
        followed[node.index] = nil
    }

    mutating func removeAll() {
        recent = nil
        table = EntryTable()
        followed.removeAll()
        hashes.removeAll()
    }

    /// The node followed under the key of `bytes` (an event's), if any; the last answer again when the event
    /// names the same directory as the one before.
    mutating func node(named bytes: UnsafeRawBufferPointer) -> NodeID? {
        if let recent, recent.key.matches(bytes) { return recent.node }
        let key = DirectoryKey(bytes)
        let node = self.node(for: key)
        recent = (key, node)
        return node
    }

    /// Appends what `event` means to `batch`: of the main group, or of the opens group (`opens`).
    mutating func translate(_ event: inout cfan_event, opens fromOpens: Bool, into batch: inout ChangeBatch) {
        let mask = event.mask
        if mask & CFAN_Q_OVERFLOW != 0 {
            batch.append(fromOpens ? .opensLost : .overflow, node: .none)
            return
        }
        let isDirectory = mask & CFAN_ONDIR != 0
        let node = withUnsafeBytes(of: &event.key) {
            self.node(named: UnsafeRawBufferPointer(rebasing: $0[..<Int(event.key_len)]))
        }
        let name = UnsafeRawBufferPointer(start: event.name, count: Int(event.name_len))
        if mask & CFAN_RENAME != 0 {
            let to = withUnsafeBytes(of: &event.key2) {
                self.node(named: UnsafeRawBufferPointer(rebasing: $0[..<Int(event.key2_len)]))
            }
            rename(
                from: node.map { ($0, name) },
                to: to.map { ($0, UnsafeRawBufferPointer(start: event.name2, count: Int(event.name2_len))) },
                isDirectory: isDirectory, into: &batch)
            return
        }
        guard let node, !name.isEmpty else { return }
        if fromOpens {
            guard !isDirectory, tracksOpens(node) else { return }
            if mask & CFAN_OPEN != 0 { batch.append(.opened, node: node, name: name) }
            if mask & (CFAN_CLOSE_WRITE | CFAN_CLOSE_NOWRITE) != 0 { batch.append(.closed, node: node, name: name) }
            return
        }
        if name.count == 1 && name[0] == UInt8(ascii: ".") {
            // An event on the followed directory itself: gone, or moved (its parent's rename says where, when the
            // parent is followed; a root moved away is lost, as under inotify).
            if mask & (CFAN_DELETE_SELF | CFAN_MOVE_SELF) != 0 { batch.append(.directoryGone, node: node) }
            return
        }

        entry(mask, node: node, name: name, isDirectory: isDirectory, into: &batch)
    }

    /// The changes of one main-group event on a name, in an order that is right whatever order its merged bits
    /// had.
    private func entry(
        _ mask: UInt64, node: NodeID, name: UnsafeRawBufferPointer, isDirectory: Bool, into batch: inout ChangeBatch
    ) {
        if mask & (CFAN_DELETE | CFAN_MOVED_FROM) != 0 {
            batch.append(.deleted, node: node, name: name, isDirectory: isDirectory)
        }
        if mask & (CFAN_CREATE | CFAN_MOVED_TO) != 0 {
            batch.append(.created, node: node, name: name, isDirectory: isDirectory)
        }
        guard !isDirectory else { return }
        if mask & CFAN_MODIFY != 0 { batch.append(.modified, node: node, name: name) }
        if mask & CFAN_ATTRIB != 0 { batch.append(.attributes, node: node, name: name) }
        if mask & CFAN_CLOSE_WRITE != 0 { batch.append(.closedAfterWrite, node: node, name: name) }
    }

    /// A `FAN_RENAME`: both halves paired when both directories are followed; a move out of the trees is a
    /// `movedFrom` abandoned at once, a move in a `movedTo` with no partner. Then the old name is looked at again
    /// (see above); the updater drops it when nothing is there.
    private mutating func rename(
        from: (NodeID, UnsafeRawBufferPointer)?, to: (NodeID, UnsafeRawBufferPointer)?,
        isDirectory: Bool, into batch: inout ChangeBatch
    ) {
        nextMove = nextMove == UInt32.max ? 1 : nextMove + 1
        let move = MoveToken(fanotify: nextMove)
        if let (node, name) = from {
            batch.append(.movedFrom, node: node, name: name, isDirectory: isDirectory, move: move)
        }
        if let (node, name) = to {
            batch.append(.movedTo, node: node, name: name, isDirectory: isDirectory, move: from == nil ? .none : move)
        } else if from != nil {
            batch.append(.moveAbandoned, node: .none, move: move)
        }
        if let (node, name) = from { batch.append(.recheck, node: node, name: name, isDirectory: isDirectory) }
    }
}

extension MoveToken {
    /// A fanotify rename's token: its own counter above 2³², so that it never equals an inotify cookie still
    /// waiting for its other half in the updater.
    init(fanotify counter: UInt32) {
        self.init(raw: 1 << 32 | UInt64(counter))
    }
}
