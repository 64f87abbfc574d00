import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// The budget of units' lock descriptors: one for the process, shared by every root; the unit being deleted whole
/// is never let go for it, and a file of another unit (a companion, a pointer's folder) is deleted only with that
/// unit's locks held too.
@Suite struct ClientLockBudgetTests {
    static let pattern = ClientLocks([ClientLock(".locks/{unit}/*.lock")])

    /// Whether a client could take `path`'s lock now (another open file description, as another process's).
    static func clientCouldLock(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        precondition(fd >= 0, "cannot open \(path)")
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// A ledger of root `tree` with one file `f` in each of `units` (depth 1): each unit's folder and its file.
    static func ledger(_ units: [String]) -> (SizeLedger, [String: (dir: NodeID, file: RecordID)]) {
        var ledger = SizeLedger()
        let root = ledger.addRoot(RootID(0), path: Array("/cache".utf8), ino: 1, dev: 1, ordered: true)
        var out: [String: (dir: NodeID, file: RecordID)] = [:]
        for (i, u) in units.enumerated() {
            let dir = Array(u.utf8).withUnsafeBytes {
                ledger.addDirectory(parent: root, name: $0, ino: UInt64(10 + i)).node
            }
            out[u] = (dir, Array("f".utf8).withUnsafeBytes { ledger.record(in: dir, named: $0).record })
        }
        return (ledger, out)
    }

    static func deleter(_ tree: TemporaryTree, _ registry: LockFileRegistry) throws -> (
        ClientLockGuardedDeleter, UnitClientLocks
    ) {
        let root = try pattern.tryTake(rootPath: tree.path, dir: "c", scope: .root, registry: registry).get()
        let units = UnitClientLocks(locks: pattern, rootPath: tree.path, dir: "c", depth: 1, registry: registry)
        return (
            ClientLockGuardedDeleter(inner: ClientLockGuardTests.ClientActsMeanwhile {}, held: root, units: units),
            units
        )
    }

    /// Within the deletion of unit `u`, a companion file in unit `v` goes only with `v`'s locks taken: refused while
    /// a client holds `v`'s lock, and held by the trim (no client can take it) once it goes.
    @Test func aCompanionInAnotherUnitNeedsThatUnitsLocks() throws {
        let tree = TemporaryTree()
        for u in ["u", "v", "w"] { tree.write(".locks/\(u)/x.lock", size: 0) }
        let registry = LockFileRegistry(unitBudget: 64)
        var (deleter, units) = try Self.deleter(tree, registry)
        let (ledger, files) = Self.ledger(["u", "v", "w"])
        let client = open(tree.url(".locks/v/x.lock"), O_RDONLY | O_CLOEXEC)
        #expect(flock(client, LOCK_EX | LOCK_NB) == 0)
        #expect(deleter.beginUnit(Array("u".utf8)) == nil)
        #expect(
            deleter.delete(files["v"]!.file, in: ledger, checkingAge: true) == .lockHeld,
            "a companion went under v's client lock")
        deleter.endUnit()
        close(client)
        // v stays busy for the trim; a third unit's companion is taken with its locks.
        #expect(deleter.beginUnit(Array("u".utf8)) == nil)
        #expect(deleter.delete(files["w"]!.file, in: ledger, checkingAge: true) == .removed)
        #expect(!Self.clientCouldLock(tree.url(".locks/w/x.lock")), "w's companion went without w's lock held")
        deleter.endUnit()
        deleter.finish()
        units.release()
        #expect(registry.count == 0)
    }

    /// A budget of 5 descriptors (a unit of one lock file holds 2: the file and its folder): the unit being deleted
    /// is never let go for a pointer's unit; the least recently used other unit is, and a pointer's unit that does
    /// not fit beside the pinned one is refused (`lockUnusable`), never deleted without its locks.
    @Test func theUnitBeingDeletedIsNeverLetGoForTheBudget() throws {
        let tree = TemporaryTree()
        for u in ["u", "v", "w"] { tree.write(".locks/\(u)/x.lock", size: 0) }
        let registry = LockFileRegistry(unitBudget: 5)
        var (deleter, units) = try Self.deleter(tree, registry)
        let (ledger, files) = Self.ledger(["u", "v", "w"])
        #expect(units.take(Array("w".utf8)) == nil)
        #expect(deleter.beginUnit(Array("u".utf8)) == nil)
        let link = PointerLink(dir: files["v"]!.dir, name: Array("p".utf8), ino: 99, target: Array("../u".utf8))
        #expect(deleter.checkLink(link, in: ledger) == nil)
        // w, the least recently used, was let go for v; u was not.
        #expect(
            !Self.clientCouldLock(tree.url(".locks/u/x.lock")) && !Self.clientCouldLock(tree.url(".locks/v/x.lock")))
        #expect(Self.clientCouldLock(tree.url(".locks/w/x.lock")) && units.descriptors == 4)
        deleter.endUnit()
        deleter.finish()
        units.release()
        #expect(registry.count == 0)
        // A budget of 3: u pinned (2) and v (2) do not fit together: v's pointer stays, u's locks stay held.
        let small = LockFileRegistry(unitBudget: 3)
        var (tight, tightUnits) = try Self.deleter(tree, small)
        #expect(tight.beginUnit(Array("u".utf8)) == nil)
        #expect(
            tight.checkLink(link, in: ledger) == .lockUnusable && tight.deleteLink(link, in: ledger) == .lockUnusable)
        #expect(tight.delete(files["v"]!.file, in: ledger, checkingAge: true) == .lockUnusable)
        #expect(!Self.clientCouldLock(tree.url(".locks/u/x.lock")), "the unit being deleted lost its lock")
        #expect(tight.evictUnit(files["u"]!.dir, files: [], in: ledger) == .moved)
        #expect(tightUnits.takeProblems().first?.busy.detail?.contains("with those of the unit being deleted") == true)
        tight.endUnit()
        tight.finish()
        tightUnits.release()
        #expect(small.count == 0)
    }

    /// Two roots' units share the process's one budget (a group trim keeps both roots' trims alive): together they
    /// hold at most the budget, the least recently used of either root let go first.
    @Test func everyRootsUnitsShareOneBudget() throws {
        let trees = [TemporaryTree(), TemporaryTree()]
        for tree in trees { for u in 0..<6 { for i in 0..<4 { tree.write(".locks/u\(u)/e\(i).lock", size: 0) } } }
        let registry = LockFileRegistry(unitBudget: 20)
        let units = trees.map {
            UnitClientLocks(locks: Self.pattern, rootPath: $0.path, dir: "c", depth: 1, registry: registry)
        }
        for u in 0..<6 {
            for root in units {
                #expect(root.take(Array("u\(u)".utf8)) == nil)
                #expect(
                    registry.unitBudget.inUse <= 20 && registry.count <= 20,
                    "\(registry.unitBudget.inUse) descriptors, \(registry.count) files")
            }
        }
        #expect(
            units[0].descriptors + units[1].descriptors == registry.unitBudget.inUse
                && units.allSatisfy { $0.descriptors > 0 })
        for root in units { root.release() }
        #expect(registry.count == 0 && registry.unitBudget.inUse == 0)
    }
}

extension ClientLockBudgetTests {
    /// A unit's `client_lock` line is said once per lock and kind of reason: a count of lock files that changes
    /// (a download added one) is not a new reason.
    @Test func aProblemIsKeyedByItsKindNotItsCounts() {
        let kind = PipelineState.problemKind
        #expect(kind(ClientLocks.tooMany(40, 20)) == kind(ClientLocks.tooMany(41, 20)))
        #expect(kind(ClientLocks.tooMany(40, 20)) != kind("it cannot be opened (Too many open files)"))
    }
}

extension ClientLockBudgetTests {
    /// The folders' units are forgotten at the end of a pass: a node of the next pass's ledger that was another
    /// unit's folder before is taken as its own unit.
    @Test func aFoldersUnitIsForgottenAtTheEndOfAPass() throws {
        let tree = TemporaryTree()
        for u in ["u", "v"] { tree.write(".locks/\(u)/x.lock", size: 0) }
        let units = UnitClientLocks(
            locks: Self.pattern, rootPath: tree.path, dir: "c", depth: 1, registry: LockFileRegistry())
        let (first, firstFiles) = Self.ledger(["u"])
        let (second, secondFiles) = Self.ledger(["v"]) // v's folder has u's node of the first ledger
        #expect(firstFiles["u"]!.dir == secondFiles["v"]!.dir)
        #expect(units.admit(firstFiles["u"]!.file, in: first) == nil)
        units.release()
        #expect(units.admit(secondFiles["v"]!.file, in: second) == nil)
        #expect(!Self.clientCouldLock(tree.url(".locks/v/x.lock")) && Self.clientCouldLock(tree.url(".locks/u/x.lock")))
        units.release()
    }

    /// A unit whose lock files fit in the budget but not with the folder they are in, nothing else held, is unusable
    /// for good: said once, never opened again at each file admitted, and not said to be crowded by a unit deleted.
    @Test func aUnitOverTheBudgetAloneIsFailedOnce() {
        let tree = TemporaryTree()
        for i in 0..<5 { tree.write(".locks/big/e\(i).lock", size: 0) }
        let registry = LockFileRegistry(unitBudget: 5)
        let units = UnitClientLocks(locks: Self.pattern, rootPath: tree.path, dir: "c", depth: 1, registry: registry)
        let big = Array("big".utf8)
        #expect(units.take(big) == .lockUnusable && units.failed.contains(big) && registry.count == 0)
        let problems = units.takeProblems()
        #expect(
            problems.count == 1 && problems[0].busy.detail?.contains("its locks need 6 descriptors") == true
                && problems[0].busy.detail?.contains("unit being deleted") == false, "\(problems)")
        for _ in 0..<3 { #expect(units.take(big) == .lockUnusable) }
        #expect(units.takeProblems().isEmpty && registry.count == 0 && registry.unitBudget.inUse == 0)
    }
}
