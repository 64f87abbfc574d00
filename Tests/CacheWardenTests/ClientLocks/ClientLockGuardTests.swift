import Foundation
import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// The locks while a trim deletes: every lock is looked at again before each deletion and before a unit goes, a
/// unit whose lock is busy loses no file in any pass of the trim, a new lock file matching a pattern counts, unit
/// names are their own bytes, and a lost lock ends the trim (prune included). Real lock files, real holders.
@Suite struct ClientLockGuardTests {
    static let old = Date().timeIntervalSince1970 - 86_400

    /// A watcher on the manual clock of one root `c` at `tree`, configured by `configure`.
    static func watcher(
        _ tree: TemporaryTree, _ clock: ManualClock, _ log: EventLog,
        _ configure: (inout DirectorySettings) -> Void
    ) throws -> Watcher {
        var dir = DirectorySettings(name: "c", path: tree.path)
        configure(&dir)
        let watcher = Watcher(
            settings: WardenSettings(directories: [dir], sizeBasis: .apparent), clock: clock, log: log)
        try watcher.start()
        return watcher
    }

    /// Renames a new file over `path`: another lock file than the one taken.
    static func replace(_ path: String) {
        close(open(path + ".new", O_CREAT | O_WRONLY | O_CLOEXEC, 0o644))
        rename(path + ".new", path)
    }

    static func lost(_ error: WardenError) -> ClientLockBusy? {
        if case .clientLockBusy(let busy) = error, busy.why == .vanished { return busy }
        return nil
    }

    /// A clear takes the units whole, then what is left of units that keep a protected file: the root's lock
    /// replaced between the two is seen before the first file of that pass.
    @Test func aLockReplacedBeforeAClearsLastPassStopsIt() throws {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        tree.write("a/keep", size: 10, mtime: Self.old)
        for i in 1...3 { tree.write("a/f\(i)", size: 1000, mtime: Self.old + Double(i)) }
        tree.write("b/x", size: 1000, mtime: Self.old)
        let lock = tree.url(".lock")
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.evictUnit = .entry
            dir.protect = ["keep"]
            dir.clientLock = ClientLocks([ClientLock(".lock")])
            dir.shouldEvict = { candidate in
                if candidate.file == "a/f1" { Self.replace(lock) }
                return true
            }
        }
        defer { watcher.stop() }
        do { _ = try watcher.clear(["c"]); Issue.record("the clear went on after its lock was replaced") } catch {
            #expect(Self.lost(error)?.lock == ".lock", "\(error)")
        }
        #expect(!tree.exists("b/x") && (1...3).allSatisfy { tree.exists("a/f\($0)") }, "\(log.evictions.map(\.file))")
    }

    /// A unit its check refused (a file rewritten since it was counted) does not spare the next unit the look at
    /// the locks: the lock replaced meanwhile stops the trim before it.
    @Test func theUnitAfterARefusedOneLooksAtTheLocksAgain() throws {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0, mtime: Self.old + 100)
        for u in 0..<6 { tree.write("u\(u)/x", size: 10_000, mtime: Self.old + Double(u)) }
        let (lock, rewritten) = (tree.url(".lock"), tree.url("u1/x"))
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.quota = 50_000
            dir.evictUnit = .entry
            dir.clientLock = ClientLocks([ClientLock(".lock")])
            dir.shouldEvict = { candidate in
                if candidate.file == "u1" { _ = truncate(rewritten, 5_000) }
                if candidate.file == "u2" { Self.replace(lock) }
                return true
            }
        }
        defer { watcher.stop() }
        #expect(log.evictions.map(\.file) == ["u0"] && tree.exists("u2/x"), "\(log.evictions.map(\.file))")
        #expect(log.deferrals.map(\.busy.why) == [.vanished], "\(log.deferrals)")
    }

    /// huggingface_hub starts a download while a clear deletes a repository's files one by one: the new lock file
    /// (`e2.lock`, locked by `flock(1)`) is seen before the next file, and the rest of that repository stays.
    @Test func aNewLockFileMatchingThePatternKeepsTheRestOfItsUnit() throws {
        let tree = TemporaryTree()
        tree.write(".locks/models--a/e1.lock", size: 0, mtime: Self.old)
        tree.write("models--a/keep", size: 10, mtime: Self.old)
        tree.write("models--a/f1", size: 1000, mtime: Self.old + 1)
        tree.write("models--a/f2", size: 1000, mtime: Self.old + 2)
        let newLock = tree.url(".locks/models--a/e2.lock")
        let download = Mutex<LockHolderProcess?>(nil)
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.evictUnit = .entry
            dir.protect = ["keep"]
            dir.clientLock = ClientLocks([ClientLock(".locks/{unit}/*.lock")])
            dir.shouldEvict = { candidate in
                if candidate.file == "models--a/f2" {
                    download.withLock { $0 = try? LockHolderProcess.flock(newLock, shared: false) }
                }
                return true
            }
        }
        defer { watcher.stop() }
        let cleared = try watcher.clear(["c"])
        #expect(download.withLock { $0 != nil }, "flock(1) did not take \(newLock)")
        #expect(
            cleared.removed == 1 && !tree.exists("models--a/f1") && tree.exists("models--a/f2"),
            "\(log.evictions.map(\.file))")
        download.withLock { $0?.release() }
    }

    /// Unit names are their own bytes: `build[1]` is no pattern (fnmatch would look for `build1`), and a name that
    /// is not UTF-8 is not re-encoded (which would find no lock file there). Both are held, and both stay.
    @Test func aUnitNameIsItsOwnBytesNeverAPattern() throws {
        let tree = TemporaryTree()
        let odd: [UInt8] = Array("u".utf8) + [0xff]
        let names: [[UInt8]] = [Array("build[1]".utf8), odd] + ["b", "c", "d", "e"].map { Array($0.utf8) }
        for (i, name) in names.enumerated() {
            Self.write(tree, Array("locks/".utf8) + name + Array("/x.lock".utf8), size: 0, mtime: Self.old + 100)
            Self.write(tree, name + Array("/blob".utf8), size: 10_000, mtime: Self.old + Double(i))
        }
        let brackets = try LockHolderProcess.flock(tree.url("locks/build[1]/x.lock"), shared: false)
        let locks = open(tree.url("locks"), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(locks) }
        let oddFD = openat(
            locks, (odd + Array("/x.lock".utf8)).map { CChar(bitPattern: $0) } + [0], O_RDONLY | O_CLOEXEC)
        #expect(oddFD >= 0 && flock(oddFD, LOCK_EX) == 0)
        defer { close(oddFD) }
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.quota = 50_000
            dir.evictUnit = .entry
            dir.clientLock = ClientLocks([ClientLock("locks/{unit}/*.lock")])
        }
        defer { watcher.stop() }
        #expect(log.evictions.map(\.file) == ["b", "c", "d", "e"], "\(log.evictions.map(\.file))")
        #expect(tree.exists("build[1]/blob") && Self.exists(tree, odd + Array("/blob".utf8)))
        brackets.release()
    }

    /// A clear with `prune_dirs` whose lock was replaced during it removes no folder either.
    @Test func aClearThatLostItsLockPrunesNothing() throws {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        for i in 0..<3 { tree.write("d/f\(i)", size: 1000, mtime: Self.old + Double(i)) }
        tree.mkdir("empty/inner")
        let lock = tree.url(".lock")
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in
            dir.pruneDirs = true
            dir.clientLock = ClientLocks([ClientLock(".lock")])
            dir.shouldEvict = { _ in
                Self.replace(lock); return true
            }
        }
        defer { watcher.stop() }
        #expect(throws: WardenError.self) { try watcher.clear(["c"]) }
        #expect(
            tree.exists("empty/inner") && (0..<3).allSatisfy { tree.exists("d/f\($0)") }, "\(log.evictions.map(\.file))"
        )
    }

    /// Whether `chattr +i` works in a temporary folder here (root, and a filesystem with the flag).
    static let immutableFiles: Bool = {
        let tree = TemporaryTree()
        tree.write("probe", size: 0)
        guard (try? runProcess("/usr/bin/chattr", ["+i", tree.url("probe")]))?.status == 0 else { return false }
        _ = try? runProcess("/usr/bin/chattr", ["-i", tree.url("probe")])
        return true
    }()

    /// Where a unit cannot leave in one rename it goes file by file; a file the system refuses (immutable) stays,
    /// and the unit's `evict` line says what was deleted of it, not the whole.
    @Test(.enabled(if: immutableFiles, "needs chattr +i: root, and a filesystem with the immutable flag"))
    func aUnitDeletedInPartSaysWhatWasDeleted() throws {
        let tree = TemporaryTree()
        for (i, name) in ["a", "b", "c"].enumerated() {
            tree.write("u0/\(name)", size: 10_000, mtime: Self.old + Double(i))
        }
        tree.write("u1/x", size: 10_000)
        #expect(try runProcess("/usr/bin/chattr", ["+i", tree.url("u0/b")]).status == 0)
        defer { _ = try? runProcess("/usr/bin/chattr", ["-i", tree.url("u0/b")]) }
        let (clock, log) = (ManualClock(), EventLog())
        let watcher = try Self.watcher(tree, clock, log) { dir in dir.evictUnit = .entry }
        defer { watcher.stop() }
        watcher.engine.queue.sync {
            guard let id = watcher.engine.state.roots.id(named: "c") else { return }
            watcher.engine.state.roots[id]?.renameRefused = Errno.improperLink // as on a FUSE mount: file by file
        }
        _ = try watcher.trim("c", to: 15_000)
        let unit = try #require(log.evictions.first { $0.file == "u0" })
        #expect(unit.size == 20_000 && unit.files == 2 && tree.exists("u0/b"), "\(unit)")
    }

    /// Within a unit deleted file by file (no rename into the trash here) the locks are looked at before each
    /// file, before each of its pointers (`evict_pointers`: links outside the unit) and before a unit's rename: a
    /// lock replaced after the unit's first file or pointer, or after its start, is seen.
    @Test func withinAUnitEachFileAndTheRenameLookAtTheLocksAgain() throws {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        let lock = tree.url(".lock")
        let link = PointerLink(dir: NodeID(0), name: Array("p".utf8), ino: 1, target: Array("../u".utf8))
        for step in ["file", "link", "rename"] {
            let held = try ClientLocks([ClientLock(".lock")]).tryTake(rootPath: tree.path, dir: "c", scope: .root).get()
            var deleter = ClientLockGuardedDeleter(
                inner: ClientActsMeanwhile { Self.replace(lock) }, held: held, units: nil)
            let ledger = SizeLedger()
            #expect(deleter.beginUnit(Array("u".utf8)) == nil)
            if step == "file" {
                #expect(deleter.delete(RecordID(0), in: ledger, checkingAge: true) == .removed)
                #expect(
                    deleter.delete(RecordID(1), in: ledger, checkingAge: true) == .lockLost,
                    "the second file went without a look")
            } else if step == "link" {
                #expect(deleter.checkLink(link, in: ledger) == nil)
                #expect(deleter.deleteLink(link, in: ledger) == .removed)
                #expect(deleter.checkLink(link, in: ledger) == .lockLost, "a pointer was looked at without the lock")
                #expect(deleter.deleteLink(link, in: ledger) == .lockLost, "the second pointer went without a look")
            } else {
                Self.replace(lock)
                #expect(
                    deleter.evictUnit(NodeID(1), files: [], in: ledger) == .lockLost, "the unit went without a look")
            }
            deleter.endUnit()
            deleter.finish()
        }
    }

    /// A unit's lock file replaced after its locks were taken is seen right before the unit's rename: that unit
    /// stays (`lockHeld`, busy for the rest of the trim), and the trim goes on with the next unit: a unit's lock lost
    /// is not the root's, and stops nothing else.
    @Test func aUnitsLockReplacedKeepsThatUnitAndTheTrimGoesOn() throws {
        let tree = TemporaryTree()
        for u in ["u0", "u1"] { tree.write(".locks/\(u)/x.lock", size: 0) }
        let registry = LockFileRegistry()
        let locks = ClientLocks([ClientLock(".locks/{unit}/*.lock")])
        let root = try locks.tryTake(rootPath: tree.path, dir: "c", scope: .root, registry: registry).get()
        let units = UnitClientLocks(locks: locks, rootPath: tree.path, dir: "c", depth: 1, registry: registry)
        var deleter = ClientLockGuardedDeleter(inner: ClientActsMeanwhile {}, held: root, units: units)
        let ledger = SizeLedger()
        #expect(deleter.beginUnit(Array("u0".utf8)) == nil && registry.count == 1)
        Self.replace(tree.url(".locks/u0/x.lock"))
        #expect(
            deleter.evictUnit(NodeID(1), files: [], in: ledger) == .lockHeld, "the unit went without a look at its lock"
        )
        deleter.endUnit()
        #expect(deleter.beginUnit(Array("u0".utf8)) == .lockHeld, "busy for the rest of the trim")
        deleter.endUnit()
        #expect(deleter.beginUnit(Array("u1".utf8)) == nil)
        #expect(deleter.evictUnit(NodeID(2), files: [], in: ledger) == .moved && root.lost == nil)
        deleter.endUnit()
        deleter.finish()
        units.release()
        #expect(registry.count == 0)
    }

    /// A deleter that deletes nothing, but lets a client act while it "deletes".
    struct ClientActsMeanwhile: FileDeleter {
        let act: () -> Void
        func delete(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome {
            act(); return .removed
        }
        func check(_ r: RecordID, in ledger: SizeLedger, checkingAge: Bool) -> DeletionOutcome? { nil }
        func deleteEmptyDirectory(_ n: NodeID, in ledger: SizeLedger, withSymlinks: Bool) -> Bool { false }
        func evictUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome { act(); return .moved }
        func checkLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome? { nil }
        func deleteLink(_ link: PointerLink, in ledger: SizeLedger) -> DeletionOutcome { act(); return .removed }
        func surveyUnit(_ n: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome? { nil }
        var renameRefused: Errno? { nil }
        var trashTrouble: Errno? { nil }
        var leftInTrash: Bool { false }
        func finish() {}
    }

    static func write(_ tree: TemporaryTree, _ relative: [UInt8], size: Int, mtime: Double) {
        let path = Array(tree.path.utf8) + [PathBytes.separator] + relative
        for i in path.indices where path[i] == PathBytes.separator && i > 0 {
            _ = mkdir(path[..<i].map { CChar(bitPattern: $0) } + [0], 0o755)
        }
        let cPath = path.map { CChar(bitPattern: $0) } + [0]
        let fd = open(cPath, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        precondition(fd >= 0 && ftruncate(fd, off_t(size)) == 0)
        close(fd)
        var times = [timespec(tv_sec: Int(mtime), tv_nsec: 0), timespec(tv_sec: Int(mtime), tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, cPath, &times, 0)
    }

    static func exists(_ tree: TemporaryTree, _ relative: [UInt8]) -> Bool {
        var st = stat()
        return lstat(
            (Array(tree.path.utf8) + [PathBytes.separator] + relative).map { CChar(bitPattern: $0) } + [0], &st) == 0
    }
}
