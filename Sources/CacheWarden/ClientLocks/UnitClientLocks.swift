import CacheWardenLedger

/// Per-unit client locks (`{unit}`: huggingface_hub's per-blob locks of a repository) for one goal's trims of a root
/// of units: the one place they are taken, for a unit deleted whole (`take`, just before it goes) and for files
/// deleted one by one (`admit`: each file's unit is found in the ledger, its folder at the unit's depth or the file
/// itself when shallower, and that unit's locks are taken before its first file goes). A unit whose lock is held,
/// or was lost while held, is busy for the rest of the goal (`.lockHeld`: none of its files goes in any later pass,
/// the prune pass of a clear included). Locks taken are kept while the trim runs and looked at again before each
/// use (`stillHeld`).
///
/// Descriptors are bounded, not units: each lock file taken is held open, and huggingface_hub keeps one per blob and
/// never deletes it, so one repository can have thousands. Every root's units share one budget for the process
/// (`UnitLockBudget`, the registry's): past it the least recently used units let go first, taken again if needed,
/// never the unit being deleted whole (pinned from `begin` to `end`). A unit with more lock files than the budget,
/// or more descriptors (lock files and their folders) than the budget on its own (`failed`: never opened again),
/// one that does not fit beside the pinned units, or one whose lock cannot be opened at all (`EMFILE`, a folder
/// where the file should be), is `.lockUnusable`: it stays, is not counted as in use, and its reason is an `error`
/// line (`problems`, said by the engine).
final class UnitClientLocks {
    let locks: ClientLocks
    let rootPath: String
    let dir: String
    let depth: Int
    let registry: LockFileRegistry
    var budget: UnitLockBudget { registry.unitBudget }
    private var held: [[UInt8]: HeldClientLocks] = [:]
    /// The unit being deleted whole: never let go for the budget until `end()`.
    private var pinned: [UInt8]?
    private(set) var busy = Set<[UInt8]>()
    private(set) var failed = Set<[UInt8]>()
    /// Why units could not be taken, not yet said (`takeProblems()`), with each unit's path.
    private var problems: [(unit: [UInt8], busy: ClientLockBusy)] = []
    /// Each folder's unit, found once per pass. Keyed by `NodeID`, which the ledger reuses once a folder is gone:
    /// emptied at `release()` (the end of each pass), so a later pass never takes a freed node's old unit.
    private var unitOfFolder: [NodeID: [UInt8]] = [:]

    init(locks: ClientLocks, rootPath: String, dir: String, depth: Int, registry: LockFileRegistry) {
        self.locks = locks
        self.rootPath = rootPath
        self.dir = dir
        self.depth = depth
        self.registry = registry
    }

    /// Descriptors held for this root's units now.
    var descriptors: Int { held.values.reduce(0) { $0 + $1.descriptors } }

    func isPinned(_ unit: [UInt8]) -> Bool { pinned == unit }

    /// Takes `unit`'s locks for its deletion whole and pins them (never let go for the budget until `end()`).
    func begin(_ unit: [UInt8]) -> DeletionOutcome? {
        pinned = nil
        if let refused = take(unit) { return refused }
        pinned = unit
        return nil
    }

    func end() { pinned = nil }

    /// Takes `unit`'s locks (or finds those taken still standing); nil: taken, else why the unit stays.
    func take(_ unit: [UInt8]) -> DeletionOutcome? {
        if failed.contains(unit) { return .lockUnusable }
        if busy.contains(unit) { return .lockHeld }
        if held[unit] != nil { return stillHeld(unit) }
        switch locks.tryTake(
            rootPath: rootPath, dir: dir, scope: .unit(unit), registry: registry, findHolders: false,
            maxFiles: budget.limit)
        {
        case .success(let taken):
            held[unit] = taken
            budget.charge(self, unit, taken.descriptors)
            guard budget.makeRoom(for: self, unit) else { return crowdedOut(unit, taken) }
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

    /// `unit`, just taken, does not fit in the budget: let go again, and refused. Alone over the limit (its lock
    /// files are within it, `tryTake`'s bound, but not with the folders they are in), for ever: it is `failed`, never
    /// opened again. Beside the pinned units, not for ever: once the unit being deleted is done, it may fit.
    private func crowdedOut(_ unit: [UInt8], _ taken: HeldClientLocks) -> DeletionOutcome {
        let count = taken.descriptors
        let lock = taken.taken.first?.target.display ?? PathBytes.display(unit)
        letGo(unit)
        let alone = count > budget.limit
        if alone { failed.insert(unit) }
        let detail =
            "its locks need \(count) descriptors (its lock files and the folders they are in), "
            + (alone ? "" : "and with those of the unit being deleted that is ")
            + "more than the \(budget.limit) a trim holds for units' locks at once (a quarter of the open-file limit, "
            + "RLIMIT_NOFILE); the unit stays: raise the limit (LimitNOFILE=) to have it trimmed"
        problems.append((unit, ClientLockBusy(dir: dir, lock: lock, why: .unusable, detail: detail)))
        return .lockUnusable
    }

    /// Whether the locks taken for `unit` all still stand, looked at afresh (`HeldClientLocks.stillHeld()`: a new
    /// lock file matching a pattern too); one lost makes the unit busy and is let go. Standing, it is the unit used
    /// last (the last the budget lets go).
    func stillHeld(_ unit: [UInt8]) -> DeletionOutcome? {
        guard let h = held[unit] else { return take(unit) }
        if h.stillHeld() {
            budget.touch(self, unit)
            return nil
        }
        letGo(unit)
        busy.insert(unit)
        return .lockHeld
    }

    func letGo(_ unit: [UInt8]) {
        budget.refund(ObjectIdentifier(self), unit)
        held.removeValue(forKey: unit)?.release()
    }

    /// The unit `r` is in: its folder at the unit's depth, or the file itself when shallower.
    func unit(of r: RecordID, in ledger: SizeLedger) -> [UInt8] {
        let folder = ledger.record(r).dir
        if let known = unitOfFolder[folder] { return known }
        let chain = ledger.chain(of: folder)
        guard chain.count >= depth else { return ledger.relativePath(ofRecord: r) }
        let unit = ledger.relativePath(of: chain[depth - 1])
        unitOfFolder[folder] = unit
        return unit
    }

    /// Whether record `r` may be deleted: its unit's locks are held (taken now if need be) and still stand. Within
    /// the deletion of `pinned`, a file of another unit (a companion) needs that unit's locks too.
    func admit(_ r: RecordID, in ledger: SizeLedger) -> DeletionOutcome? {
        let unit = unit(of: r, in: ledger)
        if let pinned, pinned != unit, let refused = stillHeld(pinned) { return refused }
        return take(unit)
    }

    /// Whether empty folder `n` may be removed: inside a unit, that unit's locks are held; above the units, yes
    /// (within the deletion of `pinned`, once its locks are found standing).
    func admit(folder n: NodeID, in ledger: SizeLedger) -> DeletionOutcome? {
        let chain = ledger.chain(of: n)
        if let pinned, let refused = stillHeld(pinned) { return refused }
        guard chain.count >= depth else { return nil }
        let unit = ledger.relativePath(of: chain[depth - 1])
        return unit == pinned ? nil : take(unit)
    }

    /// The reasons found since the last call, each with its unit's path (the engine says each as an `error` line).
    func takeProblems() -> [(unit: [UInt8], busy: ClientLockBusy)] {
        defer { problems.removeAll() }
        return problems
    }

    /// Lets every lock go (the end of a pass or of the goal); what was found busy or unusable is kept. The folders'
    /// units are forgotten: a node of this pass may be another folder in the next.
    func release() {
        for unit in Array(held.keys) { letGo(unit) }
        pinned = nil
        unitOfFolder.removeAll()
    }

    deinit { release() }
}
