import CacheWardenLedger

/// The ledger nodes the directories of one walk became, by walk-local id. Ids are handed out densely from 0 (the
/// top), so an array answers without hashing; an id whose directory was not filed (a mount point not entered,
/// a parent gone) has none.
struct WalkNodes {
    private var nodes: [NodeID]

    init(top: NodeID) { nodes = [top] }

    subscript(id: Int32) -> NodeID? {
        get {
            let i = Int(id)
            return i >= 0 && i < nodes.count && nodes[i] != .none ? nodes[i] : nil
        }
        set {
            let i = Int(id)
            guard i >= 0 else { return }
            if i >= nodes.count { nodes += repeatElement(NodeID.none, count: i + 1 - nodes.count) }
            nodes[i] = newValue ?? .none
        }
    }
}
