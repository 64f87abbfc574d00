import CacheWardenLedger

/// One change a backend saw, in the ledger's terms: a name in a watched directory node, or the node itself.
/// Names are kept in the batch's shared byte buffer (`ChangeBatch.names`), so a busy batch allocates nothing per
/// change.
struct Change {
    enum Kind: UInt8 {
        /// A name appeared (file or directory).
        case created
        /// A file's contents changed (it may still be open for writing).
        case modified
        /// A file open for writing was closed.
        case closedAfterWrite
        /// An open of a file ended, after writing or not (reported only where opens are tracked; counts opens).
        case closed
        /// A file was opened (reported only where opens are tracked).
        case opened
        /// Opens and closes were lost (their own queue overflowed): which files are open is no longer known.
        /// The totals are not affected.
        case opensLost
        /// Metadata changed (times, permissions, link count as seen through this name).
        case attributes
        /// A name was removed.
        case deleted
        /// Look at a name again: it may hold a file, a directory or nothing (a backend that cannot tell the order
        /// of what it saw; nothing there is no sign of an unseen change).
        case recheck
        /// A name left its directory by a rename; `move` pairs it with the `movedTo` that may follow.
        case movedFrom
        /// A name arrived by a rename; `move` names its `movedFrom` if that was seen.
        case movedTo
        /// The `movedFrom` with this `move` token has no partner: the entry left every watched tree.
        case moveAbandoned
        /// The watched directory itself was deleted or moved away.
        case directoryGone
        /// The backend no longer watches this node (it was removed, unmounted, or its watch was dropped).
        case watchLost
        /// Changes were lost: totals must be re-read from disk.
        case overflow
        /// Read the directory again now (a polling pass found its times moved).
        case rescan
    }

    var kind: Kind
    /// The directory the name is in, or the node the change is about.
    var node: NodeID
    var isDirectory: Bool
    /// Pairs the two halves of a rename (backend-defined; equal tokens mean the same rename).
    var move: MoveToken
    var nameStart: UInt32
    var nameLength: UInt16

    var hasName: Bool { nameLength > 0 }
}

/// Pairs `movedFrom`, `movedTo` and `moveAbandoned` of one rename: an inotify cookie, or a fanotify counter above
/// 2³² (`MoveToken(fanotify:)`), so the two never meet.
struct MoveToken: Hashable, Sendable {
    var raw: UInt64
    static let none = MoveToken(raw: 0)
}

/// The changes one backend read produced, in order, with their names back to back in one buffer.
struct ChangeBatch {
    private(set) var changes: [Change] = []
    private(set) var names: [UInt8] = []

    var isEmpty: Bool { changes.isEmpty }

    mutating func append(
        _ kind: Change.Kind, node: NodeID, name: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        isDirectory: Bool = false, move: MoveToken = .none
    ) {
        let start = UInt32(names.count)
        names.append(contentsOf: name)
        changes.append(
            Change(
                kind: kind, node: node, isDirectory: isDirectory, move: move, nameStart: start,
                nameLength: UInt16(name.count)))
    }

    /// Calls `body` with the change's name (valid only inside `body`).
    func withName<R>(_ change: Change, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try names.withUnsafeBytes { all in
            try body(
                UnsafeRawBufferPointer(
                    rebasing: all[Int(change.nameStart)..<Int(change.nameStart) + Int(change.nameLength)]))
        }
    }

    func name(_ change: Change) -> [UInt8] { withName(change) { Array($0) } }

    mutating func removeAll() {
        changes.removeAll(keepingCapacity: true)
        names.removeAll(keepingCapacity: true)
    }
}
