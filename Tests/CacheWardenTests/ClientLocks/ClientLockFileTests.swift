import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Taking client locks (`ClientLocks.tryTake`) against real holders: each kind conflicts with what it must, the
/// holder is named from /proc even where /proc/locks gives no pid or a stale one, cargo's two locks are taken in
/// order and released together, and a lock file replaced while it is being taken is not kept.
@Suite struct ClientLockFileTests {
    let tree = TemporaryTree()

    func take(
        _ locks: [ClientLock], root: String? = nil, scope: ClientLocks.Scope = .root,
        onLocked: ((LockTarget) -> Void)? = nil
    ) -> Result<HeldClientLocks, ClientLockBusy> {
        ClientLocks(locks).tryTake(rootPath: root ?? tree.path, dir: "c", scope: scope, onLocked: onLocked)
    }

    func busy(_ result: Result<HeldClientLocks, ClientLockBusy>) -> ClientLockBusy? {
        if case .failure(let busy) = result { return busy }
        return nil
    }

    @Test func flockIsTakenExclusiveAndNamesAChildHolder() throws {
        tree.write(".lock", size: 0)
        let holder = try LockHolderProcess.flock(tree.url(".lock"))
        let found = try #require(busy(take([ClientLock(".lock")])))
        #expect(
            found.why == .held && found.lock == ".lock"
                && found.holders == [ClientLockHolder(pid: holder.pid, command: "sleep")],
            "\(found)")
        holder.release()
        #expect(eventually { !LockHolderProcess.isListed(tree.url(".lock")) })
        let held = try take([ClientLock(".lock")]).get()
        #expect(isFlocked(tree.url(".lock")), "taken exclusive: a client's shared lock now waits")
        held.release()
        #expect(!isFlocked(tree.url(".lock")))
        // A missing lock file is nothing to take, and is never created.
        let none = try take([ClientLock("missing.lock")]).get()
        #expect(!tree.exists("missing.lock") && none.taken.isEmpty && none.absent.map(\.display) == ["missing.lock"])
    }

    @Test func theHolderOfAForkedLockIsTheChildNotTheGoneParent() throws {
        tree.write(".lock", size: 0)
        let holder = try LockHolderProcess.python(LockHolderProcess.forkedFlock, tree.url(".lock"))
        let child = try #require(holder.heir)
        // The parent is gone (its descriptors closed), but /proc/locks still names it.
        #expect(
            eventually {
                ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(holder.pid)/fd")) ?? []).isEmpty
            }, "the parent did not exit")
        let locks = procText("/proc/locks") ?? ""
        #expect(locks.contains(" \(holder.pid) "), "/proc/locks names the parent: \(locks)")
        let found = try #require(busy(take([ClientLock(".lock")])))
        #expect(
            found.holders.map(\.pid) == [child] && found.holders.first?.command?.contains("python") == true,
            "\(found), child \(child)")
    }

    @Test func ofdConflictsWithPosixLocksAndFlockDoesNot() throws {
        tree.write("build-cache-1/build-cache-1.lock", size: 100)
        let path = tree.url("build-cache-1/build-cache-1.lock")
        let posix = try LockHolderProcess.python(LockHolderProcess.posixWriteLock, path)
        let found = try #require(busy(take([ClientLock("build-cache-1/build-cache-1.lock", kind: .ofd)])))
        #expect(
            found.why == .held && found.holders.map(\.pid) == [posix.pid]
                && found.holders[0].command?.contains("python") == true, "\(found)")
        // flock does not see a POSIX lock (two separate kinds of lock in the kernel): that is why `ofd` exists.
        let flocked = take([ClientLock("build-cache-1/build-cache-1.lock")])
        #expect(busy(flocked) == nil)
        if case .success(let held) = flocked { held.release() }
        posix.release()
        // An OFD write lock: /proc/locks lists it with pid -1; the holder is found among every process's descriptors.
        let ofd = try LockHolderProcess.python(LockHolderProcess.ofdWriteLock, path)
        let byOFD = try #require(busy(take([ClientLock("build-cache-1/build-cache-1.lock", kind: .ofd)])))
        #expect(byOFD.holders.map(\.pid) == [ofd.pid], "\(byOFD)")
        ofd.release()
        #expect(eventually { busy(take([ClientLock("build-cache-1/build-cache-1.lock", kind: .ofd)])) == nil })
    }

    @Test func cargosTwoLocksAreTakenInOrderAndReleasedTogether() throws {
        tree.write("home/.package-cache-mutate", size: 0)
        tree.write("home/.package-cache", size: 0)
        tree.mkdir("home/registry")
        let cargo = try #require(CacheProfile.cargo.clientLock?.locks)
        let root = tree.url("home/registry")
        // A download holds the second: the first, taken before it, is let go again.
        let downloading = HeldByTest(tree.url("home/.package-cache"), exclusive: true)
        let second = try #require(busy(take(cargo, root: root)))
        #expect(second.lock == "../.package-cache" && !isFlocked(tree.url("home/.package-cache-mutate")))
        downloading.release()
        // A build holds the first, shared.
        let building = HeldByTest(tree.url("home/.package-cache-mutate"))
        #expect(busy(take(cargo, root: root))?.lock == "../.package-cache-mutate")
        building.release()
        let held = try take(cargo, root: root).get()
        #expect(held.taken.map(\.target.display) == ["../.package-cache-mutate", "../.package-cache"])
        #expect(isFlocked(tree.url("home/.package-cache-mutate")) && isFlocked(tree.url("home/.package-cache")))
        held.release()
    }

    @Test func aLockFileReplacedWhileItIsTakenIsNotKept() throws {
        tree.write(".lock", size: 0)
        let lock = tree.url(".lock")
        let old = open(lock, O_RDONLY | O_CLOEXEC)
        defer { close(old) }
        // Between the lock and the look at the path, a client renames a new lock file over it.
        let result = take([ClientLock(".lock")]) { _ in
            close(open(lock + ".new", O_CREAT | O_WRONLY, 0o644))
            rename(lock + ".new", lock)
        }
        #expect(busy(result)?.why == .replaced)
        #expect(!isFlocked(lock), "the new lock file is the client's to take")
        // (A child another test is starting holds a copy of each descriptor until its exec: wait for that.)
        #expect(eventually(timeout: 5) { flock(old, LOCK_EX | LOCK_NB) == 0 }, "the old inode's lock was not released")
    }

    @Test func patternsAndUnitsNameWhatIsThere() throws {
        for repo in ["models--a", "models--b"] {
            tree.write(".locks/\(repo)/e1.lock", size: 0)
            tree.write(".locks/\(repo)/e2.lock", size: 0)
        }
        tree.mkdir(".locks/models--b/dir.lock") // matched by the pattern, but no lock file: passed over
        let hf = [ClientLock(".locks/{unit}/*.lock")]
        let unit = try take(hf, scope: .unit(Array("models--b".utf8))).get()
        #expect(unit.taken.map(\.target.display) == [".locks/models--b/e1.lock", ".locks/models--b/e2.lock"])
        #expect(try take(hf).get().taken.isEmpty, "per-unit locks are not root-level ones")
        #expect(
            busy(take(hf, scope: .unit(Array("models--b".utf8))))?.lock == ".locks/models--b/e1.lock",
            "taken twice: held")
        #expect(try take(hf, scope: .unit(Array("models--a".utf8))).get().taken.count == 2)
        unit.release()
        #expect(try take(hf, scope: .unit(Array("models--b".utf8))).get().taken.count == 2)
        #expect(try take(hf, scope: .unit(Array("models--none".utf8))).get().taken.isEmpty)
    }
}
