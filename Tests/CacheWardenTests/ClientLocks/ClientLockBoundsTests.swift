import Foundation
import Glibc
import Testing
import CacheWardenCommandLine
@testable import CacheWarden

/// What a trim's client locks cost and say: descriptors bounded by a budget (not a count of units), holders named only from the file's own device, and the words of a command that
/// stops waiting.
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
            #expect(units.descriptors <= 20 && registry.count <= 20, "\(units.descriptors) descriptors, \(registry.count) files")
        }
        // 40 lock files cannot be held within 20 descriptors: an error to say, not a busy unit.
        #expect(units.take(Array("big".utf8)) == .lockUnusable && units.busy.isEmpty)
        let problems = units.takeProblems()
        #expect(problems.count == 1 && problems.first?.unit == Array("big".utf8)
                && problems.first?.busy.detail?.contains("its 40 lock files are more than the 20 descriptors") == true, "\(problems)")
        #expect(units.take(Array("big".utf8)) == .lockUnusable && units.takeProblems().isEmpty && registry.count <= 20)
        // A unit let go for the budget is taken again when needed.
        #expect(units.take(Array("u0".utf8)) == nil && units.descriptors <= 20)
        units.release()
        #expect(registry.count == 0 && units.descriptors == 0)
    }

    /// `/proc/locks` names devices as hex `MAJ:MIN`: a lock on an inode of the same number on another filesystem is
    /// another file, and its pid is never named as the holder.
    @Test func aHolderIsNamedOnlyFromTheFilesOwnDevice() {
        let text = """
            1: FLOCK  ADVISORY  WRITE 111 08:01:1234 0 EOF
            2: FLOCK  ADVISORY  WRITE 222 00:2a:1234 0 EOF
            3: OFDLCK ADVISORY  WRITE -1 00:2a:99 0 EOF
            3: -> FLOCK  ADVISORY  WRITE 333 00:2a:1234 0 EOF
            4: POSIX  ADVISORY  WRITE 444 00:2a:12345 0 EOF

            """
        #expect(LockHolders.listedPIDs(text, ino: 1234, dev: 0x2a) == LockHolders.Listed(pids: [111, 222], onDevice: [222], any: true))
        #expect(LockHolders.listedPIDs(text, ino: 1234, dev: 0x0801).onDevice == [111])
        #expect(LockHolders.listedPIDs("1: FLOCK ADVISORY WRITE 7 103:05:1234 0 EOF\n", ino: 1234, dev: (0x103 << 8) | 5).onDevice == [7])
        #expect(LockHolders.listedPIDs(text, ino: 77, dev: 0x2a) == LockHolders.Listed())
    }

    /// A holder's descriptor is matched from its `fdinfo` alone (inode and mount, else its link's text), never by
    /// a `stat` through it; its command is its `comm` name, not its command line.
    @Test func aHoldersDescriptorIsMatchedFromFdinfo() {
        let target = LockHolders.Target(ino: 1234, needle: ":1234 ", mountID: "24", link: "/c/.lock", deadline: .max)
        #expect(LockHolders.isFile("pos:\t0\nflags:\t02\nmnt_id:\t24\nino:\t1234\nlock:\t1: FLOCK ...\n", "/nonexistent", target))
        #expect(!LockHolders.isFile("pos:\t0\nmnt_id:\t25\nino:\t1234\n", "/nonexistent", target), "another mount's inode 1234")
        #expect(!LockHolders.isFile("pos:\t0\nmnt_id:\t24\nino:\t99\n", "/nonexistent", target))
        #expect(!LockHolders.isFile("pos:\t0\nmnt_id:\t24\n", "/nonexistent", target), "no ino: line, and a link that is not ours")
        #expect(LockHolders.command(of: getpid()) == String(ProcessInfo.processInfo.processName.prefix(15)))
    }

    /// `--timeout` is bounded (past `Int.max` seconds the command crashed), and the last line says what was deleted:
    /// nothing, unless a try ran and stopped when the lock changed under it (`why: vanished`).
    @Test func theCommandSaysWhatItDeletedWhenItStopsWaiting() {
        #expect(LockWaitText.timeout("60") == 60 && LockWaitText.timeout("0") == 0 && LockWaitText.timeout("31536000") == 31_536_000)
        for bad in ["1e19", "31536001", "-1", "nan", "inf", "x", ""] { #expect(LockWaitText.timeout(bad) == nil, "\(bad)") }
        let held = ClientLockBusy(dir: "c", lock: ".lock", why: .held)
        let vanished = ClientLockBusy(dir: "c", lock: ".lock", why: .vanished)
        #expect(LockWaitText.ended("trim c", held, waited: nil, stopped: false) == "trim c: \(held); not waiting (--no-wait), nothing deleted")
        #expect(LockWaitText.ended("trim c", held, waited: 2.5, stopped: false) == "trim c: gave up after 2 s: \(held); nothing deleted")
        let stopped = LockWaitText.ended("trim c", vanished, waited: nil, stopped: true)
        #expect(!stopped.contains("nothing deleted") && stopped.hasSuffix("what it deleted before then stays deleted"), "\(stopped)")
        #expect(!LockWaitText.ended("clear", held, waited: 9, stopped: true).contains("nothing deleted"))
    }
}
