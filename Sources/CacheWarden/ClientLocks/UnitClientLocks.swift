/// Per-unit client locks (`{unit}`: huggingface_hub's per-blob locks of a repository) for one trim of a root of
/// units: the one place they are taken, for a unit deleted whole (`take`, just before it goes) and for files deleted
/// one by one (`admit`: each file's unit is found in the ledger, its folder at the unit's depth or the file itself
/// when shallower, and that unit's locks are taken before its first file goes). A unit whose lock is held, or was
/// lost while held, is busy for the rest of the trim: none of its files goes in any later pass. Locks taken are
/// kept while the trim runs and looked at again before each use (`stillHeld`); at most `capacity` units' locks are
/// held at once (the least recently used let go first, taken again if needed), so a cache of thousands of units
/// never needs thousands of descriptors.
final class UnitClientLocks {
    static let capacity = 32

    let locks: ClientLocks
    let rootPath: String
    let dir: String
    let depth: Int
    let registry: LockFileRegistry
    private var held: [[UInt8]: HeldClientLocks] = [:]
    private var recent: [[UInt8]] = []
    private(set) var busy = Set<[UInt8]>()
    private var unitOfFolder: [NodeID: [UInt8]] = [:]

    init(locks: ClientLocks, rootPath: String, dir: String, depth: Int, registry: LockFileRegistry) {
        self.locks = locks
        self.rootPath = rootPath
        self.dir = dir
        self.depth = depth
        self.registry = registry
    }

    /// Takes `unit`'s locks (or finds those taken still standing); false: busy, and it stays busy.
    func take(_ unit: [UInt8]) -> Bool {
        if busy.contains(unit) { return false }
        if held[unit] != nil {
            guard stillHeld(unit) else { return false }
            recent.removeAll { $0 == unit }
            recent.append(unit)
            return true
        }
        switch locks.tryTake(rootPath: rootPath, dir: dir, scope: .unit(unit), registry: registry, findHolders: false) {
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

    /// Whether the locks taken for `unit` all still stand, looked at afresh (`HeldClientLocks.stillHeld()`: a new
    /// lock file matching a pattern too); one lost makes the unit busy and is let go.
    func stillHeld(_ unit: [UInt8]) -> Bool {
        guard let h = held[unit] else { return take(unit) }
        if h.stillHeld() { return true }
        h.release()
        held[unit] = nil
        recent.removeAll { $0 == unit }
        busy.insert(unit)
        return false
    }

    /// Whether record `r` may be deleted: its unit's locks are held (taken now if need be) and still stand.
    func admit(_ r: RecordID, in ledger: SizeLedger) -> Bool {
        let folder = ledger.record(r).dir
        if let known = unitOfFolder[folder] { return take(known) }
        let chain = ledger.chain(of: folder)
        guard chain.count >= depth else { return take(ledger.relativePath(ofRecord: r)) }
        let unit = ledger.relativePath(of: chain[depth - 1])
        unitOfFolder[folder] = unit
        return take(unit)
    }

    /// Whether empty folder `n` may be removed: inside a unit, that unit's locks are held; above the units, yes.
    func admit(folder n: NodeID, in ledger: SizeLedger) -> Bool {
        let chain = ledger.chain(of: n)
        return chain.count < depth || take(ledger.relativePath(of: chain[depth - 1]))
    }

    func release() {
        for h in held.values { h.release() }
        held.removeAll()
        recent.removeAll()
    }

    deinit { release() }
}
