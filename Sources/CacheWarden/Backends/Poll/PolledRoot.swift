import CacheWardenLedger

/// One polled root: its directories' snapshots, its timer and what its last pass cost.
struct PolledRoot {
    var interval: Int64
    var nodes: [NodeID: PollSnapshot] = [:]
    var timer: ClockTimer?
    /// Passes run so far (every `PollBackend.fullPassEvery`-th re-reads every directory).
    var passes = 0
    var cost: PollPassCost?

    init(interval: Int64) { self.interval = interval }

    /// The directories this pass re-reads (parents first) and those gone from their paths.
    func due(full: Bool) -> (reread: [NodeID], gone: [NodeID]) {
        var reread: [(NodeID, Int)] = []
        var gone: [NodeID] = []
        for (node, snapshot) in nodes {
            switch snapshot.check() {
            case .unchanged: if full { reread.append((node, snapshot.path.utf8.count)) }
            case .changed: reread.append((node, snapshot.path.utf8.count))
            case .gone: gone.append(node)
            }
        }
        // Shorter paths first: a parent re-read before its children drops those that went with a rename.
        reread.sort { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0.raw < $1.0.raw) }
        return (reread.map(\.0), gone)
    }
}
