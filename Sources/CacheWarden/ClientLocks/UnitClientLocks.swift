/// Per-unit client locks (`{unit}`) for a trim that deletes file by file (a group or low-disk trim, a clear, in a
/// root of units): each file's unit is found in the ledger (its folder at the unit's depth, or the file itself when
/// it is shallower) and that unit's locks are taken before its first file goes. A unit whose lock is held keeps its
/// files for this trim. At most `capacity` units' locks are held at once (the least recently used let go first), so a
/// cache of thousands of units never needs thousands of descriptors.
final class UnitClientLocks {
    static let capacity = 32

    let locks: ClientLocks
    let rootPath: String
    let dir: String
    let depth: Int
    /// Files the root-level take holds already (never taken twice: that would be a conflict with itself).
    let skipping: Set<HeldClientLocks.FileIdentity>
    private var held: [String: HeldClientLocks] = [:]
    private var recent: [String] = []
    private var busy = Set<String>()
    private var unitOfFolder: [NodeID: String] = [:]

    init(locks: ClientLocks, rootPath: String, dir: String, depth: Int, skipping: Set<HeldClientLocks.FileIdentity>) {
        self.locks = locks
        self.rootPath = rootPath
        self.dir = dir
        self.depth = depth
        self.skipping = skipping
    }

    /// Whether record `r` may be deleted: its unit's locks are held (taken now if need be).
    func admit(_ r: RecordID, in ledger: SizeLedger) -> Bool {
        let unit = self.unit(of: r, ledger)
        if busy.contains(unit) { return false }
        if held[unit] != nil {
            recent.removeAll { $0 == unit }
            recent.append(unit)
            return true
        }
        switch locks.tryTake(rootPath: rootPath, dir: dir, scope: .unit(unit), skipping: skipping, findHolders: false) {
        case .success(let taken):
            held[unit] = taken
            recent.append(unit)
            if recent.count > Self.capacity { held.removeValue(forKey: recent.removeFirst())?.release() }
            return true
        case .failure:
            busy.insert(unit)
            return false
        }
    }

    /// The unit of record `r`, relative to the root: its folder at `depth`, or the file itself above it.
    private func unit(of r: RecordID, _ ledger: SizeLedger) -> String {
        let folder = ledger.record(r).dir
        if let known = unitOfFolder[folder] { return known }
        let chain = ledger.chain(of: folder)
        let unit = chain.count >= depth ? PathBytes.display(ledger.relativePath(of: chain[depth - 1]))
            : PathBytes.display(ledger.relativePath(ofRecord: r))
        if chain.count >= depth { unitOfFolder[folder] = unit }
        return unit
    }

    func release() {
        for h in held.values { h.release() }
        held.removeAll()
        recent.removeAll()
    }

    deinit { release() }
}
