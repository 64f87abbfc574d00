import Foundation
import Glibc
import Testing
import CacheWardenCommandLine
@testable import CacheWarden

/// What a trim's client locks cost and say: descriptors bounded by a budget (not a count of units), holders named only
/// from the file's own device, and the words of a command that stops waiting.
@Suite struct ClientLockBoundsTests {
    static let pattern = ClientLocks([ClientLock(".locks/{unit}/*.lock")])

    @Test func unitLocksHoldAtMostTheirDescriptorBudget() throws {
        let tree = TemporaryTree()
        for u in 0..<6 { for i in 0..<5 { tree.write(".locks/u\(u)/e\(i).lock", size: 0) } }
        for i in 0..<40 { tree.write(".locks/big/e\(i).lock", size: 0) }
        let registry = LockFileRegistry(unitBudget: 20)
        let units = UnitClientLocks(locks: Self.pattern, rootPath: tree.path, dir: "c", depth: 1, registry: registry)
        for u in 0..<6 {
            #expect(units.take(Array("u\(u)".utf8)) == nil)
            #expect(
                units.descriptors <= 20 && registry.count <= 20,
                "\(units.descriptors) descriptors, \(registry.count) files")
        }
        // 40 lock files cannot be held within 20 descriptors: an error to say, not a busy unit.
        #expect(units.take(Array("big".utf8)) == .lockUnusable && units.busy.isEmpty)
        let problems = units.takeProblems()
        #expect(
            problems.count == 1 && problems.first?.unit == Array("big".utf8)
                && problems.first?.busy.detail?.contains("its 40 lock files are more than the 20 descriptors") == true,
            "\(problems)")
        #expect(units.take(Array("big".utf8)) == .lockUnusable && units.takeProblems().isEmpty && registry.count <= 20)
        // A unit let go for the budget is taken again when needed.
        #expect(units.take(Array("u0".utf8)) == nil && units.descriptors <= 20)
        units.release()
        #expect(registry.count == 0 && units.descriptors == 0)
    }

    /// `/proc/locks` names devices as hex `MAJ:MIN`: a lock on an inode of the same number on another filesystem is
    /// another file, and its pid is never named as the holder. The device is the mount's, from `mountinfo`.
    @Test func aHolderIsNamedOnlyFromTheFilesOwnDevice() {
        let text = """
            1: FLOCK  ADVISORY  WRITE 111 08:01:1234 0 EOF
            2: FLOCK  ADVISORY  WRITE 222 00:2a:1234 0 EOF
            3: OFDLCK ADVISORY  WRITE -1 00:2a:99 0 EOF
            3: -> FLOCK  ADVISORY  WRITE 333 00:2a:1234 0 EOF
            4: POSIX  ADVISORY  WRITE 444 00:2a:12345 0 EOF
            5: OFDLCK ADVISORY  READ -1 00:2a:1234 0 EOF

            """
        #expect(LockHolders.listedPIDs(text, id: "00:2a:1234") == LockHolders.Listed(pids: [222], locks: 2))
        #expect(LockHolders.listedPIDs(text, id: "08:01:1234") == LockHolders.Listed(pids: [111], locks: 1))
        #expect(LockHolders.listedPIDs(text, id: "00:2a:77") == LockHolders.Listed())
        #expect(
            LockHolders.device(major: 0x103, minor: 5) == "103:05" && LockHolders.device((0x103 << 8) | 5) == "103:05")
        let table =
            "22 1 0:21 / /proc rw shared:12 - proc proc rw\n31 22 0:42 / /srv/cache rw,relatime - btrfs /dev/sdb rw\n"
        let mounts = MountTable(parsing: table)
        #expect(
            mounts.mount(id: 31).flatMap(LockHolders.lockDevice).map { "\($0.device) \($0.type)" } == "00:2a btrfs")
        #expect(mounts.mount(id: 22)?.type == "proc" && mounts.mount(id: 3) == nil)
    }

    /// A holder's descriptor is matched from its `fdinfo` alone: its `ino:`, and a `lock:` line naming the file's
    /// `MAJ:MIN:INO` (no mount ID: it differs between mount namespaces), never by a `stat` through it; its command
    /// is its `comm` name, not its command line.
    @Test func aHoldersDescriptorIsMatchedFromFdinfo() {
        let target = LockHolders.Target(ino: 1234, id: "00:2a:1234", deadline: .max)
        let lock = "lock:\t1: FLOCK  ADVISORY  WRITE 7 00:2a:1234 0 EOF\n"
        #expect(LockHolders.isFile("pos:\t0\nflags:\t02\nmnt_id:\t24\nino:\t1234\n" + lock, target))
        #expect(
            LockHolders.isFile("pos:\t0\nmnt_id:\t977\n" + lock, target),
            "another namespace's mount ID, no ino: (before 5.14)")
        #expect(!LockHolders.isFile("pos:\t0\nmnt_id:\t24\nino:\t1234\n", target), "open, no lock through it")
        #expect(
            !LockHolders.isFile("pos:\t0\nino:\t1234\nlock:\t1: FLOCK  ADVISORY  WRITE 7 08:01:1234 0 EOF\n", target),
            "another device's inode 1234")
        #expect(!LockHolders.isFile("pos:\t0\nino:\t99\n" + lock, target))
        #expect(LockHolders.command(of: getpid()) == String(ProcessInfo.processInfo.processName.prefix(15)))
    }

    /// A holder in a mount namespace of its own (`unshare -m`: its mount IDs are not the test's) is named: by the
    /// pid `/proc/locks` gives (`flock`), and found through its descriptors where it gives none (OFD, -1).
    @Test(.enabled(if: LockHolderProcess.canUnshareMounts, "needs root and util-linux unshare (unshare -m)"))
    func aHolderInAnotherMountNamespaceIsNamed() throws {
        let tree = TemporaryTree()
        tree.write(".lock", size: 0)
        let flock = try LockHolderProcess.flock(tree.url(".lock"), shared: false, ownMounts: true)
        #expect(LockHolderProcess.hasOwnMounts(flock.pid))
        let byFlock = Self.busy(ClientLocks([ClientLock(".lock")]).tryTake(rootPath: tree.path, dir: "c", scope: .root))
        #expect(byFlock?.holders == [ClientLockHolder(pid: flock.pid, command: "sleep")], "\(byFlock)")
        flock.release()
        let ofd = try LockHolderProcess.python(LockHolderProcess.ofdWriteLock, tree.url(".lock"), ownMounts: true)
        #expect(LockHolderProcess.hasOwnMounts(ofd.pid))
        let byOFD = Self.busy(
            ClientLocks([ClientLock(".lock", kind: .ofd)]).tryTake(rootPath: tree.path, dir: "c", scope: .root))
        #expect(byOFD?.holders.map(\.pid) == [ofd.pid], "\(byOFD)")
        ofd.release()
    }

    static func busy(_ result: Result<HeldClientLocks, ClientLockBusy>) -> ClientLockBusy? {
        if case .failure(let busy) = result { return busy }
        return nil
    }

    /// `--timeout` is bounded (past `Int.max` seconds the command crashed), and the last line says what was deleted:
    /// nothing, unless a try ran and stopped when the lock changed under it (`why: vanished`).
    @Test func theCommandSaysWhatItDeletedWhenItStopsWaiting() {
        #expect(
            LockWaitText.timeout("60") == 60 && LockWaitText.timeout("0") == 0
                && LockWaitText.timeout("31536000") == 31_536_000)
        for bad in ["1e19", "31536001", "-1", "nan", "inf", "x", ""] {
            #expect(LockWaitText.timeout(bad) == nil, "\(bad)")
        }
        let held = ClientLockBusy(dir: "c", lock: ".lock", why: .held)
        let vanished = ClientLockBusy(dir: "c", lock: ".lock", why: .vanished)
        #expect(
            LockWaitText.ended("trim c", held, waited: nil, stopped: false)
                == "trim c: \(held); not waiting (--no-wait), nothing deleted")
        #expect(
            LockWaitText.ended("trim c", held, waited: 2.5, stopped: false)
                == "trim c: gave up after 2 s: \(held); nothing deleted")
        let stopped = LockWaitText.ended("trim c", vanished, waited: nil, stopped: true)
        #expect(
            !stopped.contains("nothing deleted") && stopped.hasSuffix("what it deleted before then stays deleted"),
            "\(stopped)")
        #expect(!LockWaitText.ended("clear", held, waited: 9, stopped: true).contains("nothing deleted"))
    }
}
