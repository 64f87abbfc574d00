/// Typed identifiers of the ledger's slabs. Each wraps the slot index of its slab, so a node can never be passed
/// where a record is expected; all are 4 bytes, the width the ledger stores them in.

/// A registered root (one `dir.<name>`), numbered in registration order.
package struct RootID: Hashable, Comparable, Sendable, CustomStringConvertible {
    package var raw: UInt32
    package init(_ raw: UInt32) { self.raw = raw }
    package var index: Int { Int(raw) }
    package static func < (a: RootID, b: RootID) -> Bool { a.raw < b.raw }
    package var description: String { "root#\(raw)" }
}

/// A directory of a registered tree (a slot of `SizeLedger.nodes`).
package struct NodeID: Hashable, Sendable, CustomStringConvertible {
    package var raw: UInt32
    package init(_ raw: UInt32) { self.raw = raw }
    package var index: Int { Int(raw) }
    /// "No node": the parent of a root.
    package static let none = NodeID(UInt32.max)
    package var description: String { "node#\(raw)" }
}

/// One name of a regular file (a slot of `SizeLedger.records`).
package struct RecordID: Hashable, Sendable, CustomStringConvertible {
    package var raw: UInt32
    package init(_ raw: UInt32) { self.raw = raw }
    package var index: Int { Int(raw) }
    package var description: String { "record#\(raw)" }
}
