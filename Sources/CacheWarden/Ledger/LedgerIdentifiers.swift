/// Typed identifiers of the ledger's slabs. Each wraps the slot index of its slab, so a node can never be passed
/// where a record is expected; all are 4 bytes, the width the ledger stores them in.

/// A registered root (one `dir.<name>`), numbered in registration order.
struct RootID: Hashable, Comparable, Sendable, CustomStringConvertible {
    var raw: UInt32
    init(_ raw: UInt32) { self.raw = raw }
    var index: Int { Int(raw) }
    static func < (a: RootID, b: RootID) -> Bool { a.raw < b.raw }
    var description: String { "root#\(raw)" }
}

/// A directory of a registered tree (a slot of `SizeLedger.nodes`).
struct NodeID: Hashable, Sendable, CustomStringConvertible {
    var raw: UInt32
    init(_ raw: UInt32) { self.raw = raw }
    var index: Int { Int(raw) }
    /// "No node": the parent of a root.
    static let none = NodeID(UInt32.max)
    var description: String { "node#\(raw)" }
}

/// One name of a regular file (a slot of `SizeLedger.records`).
struct RecordID: Hashable, Sendable, CustomStringConvertible {
    var raw: UInt32
    init(_ raw: UInt32) { self.raw = raw }
    var index: Int { Int(raw) }
    var description: String { "record#\(raw)" }
}
