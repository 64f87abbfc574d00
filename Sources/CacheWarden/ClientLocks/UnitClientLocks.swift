/// Per-unit client locks (`{unit}`: huggingface_hub's per-blob locks of a repository) for one goal's trims of a root
/// of units: the one place they are taken, for a unit deleted whole (`take`, just before it goes) and for files
/// deleted one by one (`admit`: each file's unit is found in the ledger, its folder at the unit's depth or the file
/// itself when shallower, and that unit's locks are taken before its first file goes). A unit whose lock is held,
/// or was lost while held, is busy for the rest of the goal (`.lockHeld`: none of its files goes in any later pass,
/// the prune pass of a clear included). Locks taken are kept while the trim runs and looked at again before each
/// use (`stillHeld`).
///
/// Descriptors are bounded, not units: each lock file taken is held open, and huggingface_hub keeps one per blob and
/// never deletes it, so one repository can have thousands. At most `budget` descriptors are held for units at once
/// (the least recently used units let go first, taken again if needed); a unit with more lock files than that, or
/// one whose lock cannot be opened at all (`EMFILE`, a folder where the file should be), is `.lockUnusable`: it
/// stays, is not counted as in use, and its reason is an `error` line (`problems`, said by the engine).
final class UnitClientLocks {
    let locks: ClientLocks
    let rootPath: String
    let dir: String
    let depth: Int
    let registry: LockFileRegistry
    let budget: Int
    private var held: [[UInt8]: HeldClientLocks] = [:]
    private var recent: [[UInt8]] = []
    private var inUse = 0
    private(set) var busy = Set<[UInt8]>()
    private(set) var failed = Set<[UInt8]>()
    /// Why units could not be taken, not yet said (`takeProblems()`), with each unit's path.
    private var problems: [(unit: [UInt8], busy: ClientLockBusy)] = []
    private var unitOfFolder: [NodeID: [UInt8]] = [:]

    init(locks: ClientLocks, rootPath: String, dir: String, depth: Int, registry: LockFileRegistry,
         budget: Int = UnitClientLocks.defaultBudget()) {
        self.locks = locks
        self.rootPath = rootPath
        self.dir = dir
        self.depth = depth
        self.registry = registry
        self.budget = budget
    }

    /// A quarter of the soft open-file limit (`RLIMIT_NOFILE`), from 16 to 16,384: the rest is the watcher's, the
    /// control socket's and its clients'. `cachewarden run` and `clear` raise the soft limit to the hard one at start.
    static func defaultBudget() -> Int {
        guard let soft = OpenFileLimit.soft() else { return 256 }
        return min(16_384, max(16, Int(clamping: soft) / 4))
    }

    /// Descriptors held for units now.
    var descriptors: Int { inUse }

    /// Takes `unit`'s locks (or finds those taken still standing); nil: taken, else why the unit stays.
    func take(_ unit: [UInt8]) -> DeletionOutcome? {
        if failed.contains(unit) { return .lockUnusable }
        if busy.contains(unit) { return .lockHeld }
        if held[unit] != nil {
            if let refused = stillHeld(unit) { return refused }
            recent.removeAll { $0 == unit }
            recent.append(unit)
            return nil
        }
        switch locks.tryTake(rootPath: rootPath, dir: dir, scope: .unit(unit), registry: registry, findHolders: false, maxFiles: budget) {
        case .success(let taken):
            held[unit] = taken
            inUse += taken.descriptors
            recent.append(unit)
            while inUse > budget, recent.count > 1 { letGo(recent[0]) }
            return nil
        case .failure(let found) where found.why == .unusable:
            // Not busy: a client's lock that cannot be taken (too many files, a descriptor limit, not a file).
            failed.insert(unit)
            problems.append((unit, found))
            return .lockUnusable
        case .failure:
            busy.insert(unit)
            return .lockHeld
        }
    }

    /// Whether the locks taken for `unit` all still stand, looked at afresh (`HeldClientLocks.stillHeld()`: a new
    /// lock file matching a pattern too); one lost makes the unit busy and is let go.
    func stillHeld(_ unit: [UInt8]) -> DeletionOutcome? {
        guard let h = held[unit] else { return take(unit) }
        if h.stillHeld() { return nil }
        letGo(unit)
        busy.insert(unit)
        return .lockHeld
    }

    private func letGo(_ unit: [UInt8]) {
        guard let h = held.removeValue(forKey: unit) else { return }
        inUse -= h.descriptors
        h.release()
        recent.removeAll { $0 == unit }
    }

    /// Whether record `r` may be deleted: its unit's locks are held (taken now if need be) and still stand.
    func admit(_ r: RecordID, in ledger: SizeLedger) -> DeletionOutcome? {
        let folder = ledger.record(r).dir
        if let known = unitOfFolder[folder] { return take(known) }
        let chain = ledger.chain(of: folder)
        guard chain.count >= depth else { return take(ledger.relativePath(ofRecord: r)) }
        let unit = ledger.relativePath(of: chain[depth - 1])
        unitOfFolder[folder] = unit
        return take(unit)
    }

    /// Whether empty folder `n` may be removed: inside a unit, that unit's locks are held; above the units, yes.
    func admit(folder n: NodeID, in ledger: SizeLedger) -> DeletionOutcome? {
        let chain = ledger.chain(of: n)
        return chain.count < depth ? nil : take(ledger.relativePath(of: chain[depth - 1]))
    }

    /// The reasons found since the last call, each with its unit's path (the engine says each as an `error` line).
    func takeProblems() -> [(unit: [UInt8], busy: ClientLockBusy)] {
        defer { problems.removeAll() }
        return problems
    }

    /// Lets every lock go (the end of a pass or of the goal); what was found busy or unusable is kept.
    func release() {
        for h in held.values { h.release() }
        held.removeAll()
        recent.removeAll()
        inUse = 0
    }

    deinit { release() }
}
