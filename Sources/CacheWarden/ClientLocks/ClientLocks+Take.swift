import CWardenShims
import Glibc
import SystemPackage

/// Taking a directory's client locks: each lock file opened as it is (`O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
/// O_CLOEXEC`: never created, never through a symlink, a FIFO never waited on), locked without blocking, then
/// checked to be still the file at its path — one replaced between the open and the lock is released and counts
/// as busy: the client that replaced it holds the new one.
extension ClientLocks {
    /// Which of the locks a take concerns.
    enum Scope: Equatable {
        /// The root-level locks (those without `{unit}`): before a trim of the root.
        case root
        /// The per-unit locks of one unit, by its path relative to the root: just before it is deleted.
        case unit(String)
    }

    /// The path of `lock` to take for `scope`, `{unit}` filled in; nil when the scope does not concern it.
    func components(of lock: ClientLock, _ scope: Scope) -> [Substring]? {
        let parts = lock.components
        switch scope {
        case .root: return lock.isPerUnit ? nil : parts
        case .unit(let unit):
            guard lock.isPerUnit else { return nil }
            return parts.flatMap { $0 == ClientLock.unitPlaceholder ? unit.split(separator: "/") : [$0] }
        }
    }

    /// Takes the locks of `scope`, in order, under the root at the canonical `rootPath`, never blocking: all of
    /// them, or none (the first one busy releases those taken before it). `skipping`: files this trim holds
    /// already. `findHolders`: look in `/proc` for who holds a busy lock (what a `deferred` line names).
    /// `onLocked`: a test's seam, called between the lock and the check that the path still names the file.
    func tryTake(rootPath: String, dir: String, scope: Scope, skipping: Set<HeldClientLocks.FileIdentity> = [],
                 findHolders: Bool = true, onLocked: ((LockTarget) -> Void)? = nil) -> Result<HeldClientLocks, ClientLockBusy> {
        let held = HeldClientLocks()
        for lock in locks {
            guard let parts = components(of: lock, scope) else { continue }
            let targets: [LockTarget]
            do throws(LockPathUnusable) { targets = try LockTargets.resolve(parts, rootPath: rootPath) } catch {
                held.release()
                return .failure(ClientLockBusy(dir: dir, lock: error.display, why: .unusable, detail: error.detail))
            }
            for target in targets {
                if let busy = take(target, lock.kind, into: held, skipping: skipping, dir: dir, findHolders: findHolders,
                                   onLocked: onLocked) {
                    held.release()
                    return .failure(busy)
                }
            }
        }
        return .success(held)
    }

    /// The per-unit locks of `unit` (nil: the root-level ones) under the root at `rootPath`: the API the evictor
    /// calls just before it deletes a unit.
    func tryTake(rootPath: String, dir: String, unit: String?) -> Result<HeldClientLocks, ClientLockBusy> {
        tryTake(rootPath: rootPath, dir: dir, scope: unit.map(Scope.unit) ?? .root)
    }

    /// Takes one lock file into `held`; the reason when it cannot be taken (nil: taken, or nothing to take).
    private func take(_ target: LockTarget, _ kind: ClientLock.Kind, into held: HeldClientLocks,
                      skipping: Set<HeldClientLocks.FileIdentity>, dir: String, findHolders: Bool,
                      onLocked: ((LockTarget) -> Void)?) -> ClientLockBusy? {
        let fd: Int32, identity: HeldClientLocks.FileIdentity
        switch Self.open(target) {
        case .absent:
            if target.literal { held.addAbsent(target) }
            return nil
        case .skip: return nil
        case .unusable(let detail): return ClientLockBusy(dir: dir, lock: target.display, why: .unusable, detail: detail)
        case .file(let opened, let st): (fd, identity) = (opened, HeldClientLocks.FileIdentity(st))
        }
        if skipping.contains(identity) || held.identities.contains(identity) { Syscall.close(fd); return nil }
        do throws(Errno) { try Self.lock(fd, kind) } catch {
            defer { Syscall.close(fd) }
            guard [.wouldBlock, .resourceTemporarilyUnavailable, .permissionDenied].contains(error) else {
                return ClientLockBusy(dir: dir, lock: target.display, why: .unusable,
                                      detail: "locking it failed: \(String(cString: strerror(error.rawValue)))")
            }
            return ClientLockBusy(dir: dir, lock: target.display, why: .held, holders: findHolders ? LockHolders.of(fd) : [])
        }
        onLocked?(target)
        // Still the file at its path? One removed or replaced meanwhile is not the one the next client locks.
        guard HeldClientLocks.identity(of: target) == identity else {
            Syscall.close(fd)
            return ClientLockBusy(dir: dir, lock: target.display, why: .replaced)
        }
        held.add(fd, target, identity)
        return nil
    }

    /// What opening a target found.
    enum Opened {
        case file(Int32, stat)
        /// Not there: no client made it.
        case absent
        /// Matched by a pattern but not a regular file: not a lock.
        case skip
        case unusable(String)
    }

    /// Opens a lock file as it is: read-only, never through a symlink, never waiting (a FIFO), never creating.
    static func open(_ target: LockTarget) -> Opened {
        let fd: Int32
        do throws(Errno) {
            fd = try Array(target.name.utf8).withCString { p throws(Errno) in
                try Syscall.retrying { openat(target.folder.fd, p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
            }
        } catch {
            if error == .noSuchFileOrDirectory { return .absent }
            if !target.literal && error == .tooManySymbolicLinkLevels { return .skip }
            return .unusable(error == .tooManySymbolicLinkLevels ? "it is a symlink; a lock file is never followed through one"
                             : "it cannot be opened read-only (\(String(cString: strerror(error.rawValue))))")
        }
        guard let st = try? Syscall.fstat(fd), st.isRegularFile else {
            let kind = (try? Syscall.fstat(fd)).map { FileContents.kind(of: $0.st_mode) } ?? "unreadable"
            Syscall.close(fd)
            return target.literal ? .unusable("it is \(kind), not a regular file") : .skip
        }
        return .file(fd, st)
    }

    /// `flock(LOCK_EX | LOCK_NB)`, or an OFD read lock over the whole file.
    private static func lock(_ fd: Int32, _ kind: ClientLock.Kind) throws(Errno) {
        switch kind {
        case .flock: _ = try Syscall.retrying { flock(fd, LOCK_EX | LOCK_NB) }
        case .ofd: _ = try Syscall.retrying { cwsys_ofd_try_read_lock(fd) }
        }
    }

    /// What is wrong with the lock files named outright, as `check` reports it (nil: each is a regular file this
    /// process can open, or is not there). Patterns are not looked at: they name whatever is there.
    func problem(rootPath: String) -> String? {
        for lock in locks where !lock.isPattern {
            let targets: [LockTarget]
            do throws(LockPathUnusable) { targets = try LockTargets.resolve(lock.components, rootPath: rootPath) } catch {
                return "\(lock.path): \(error.detail)"
            }
            for target in targets {
                switch Self.open(target) {
                case .file(let fd, _): Syscall.close(fd)
                case .absent, .skip: break
                case .unusable(let detail): return "\(target.display): \(detail)"
                }
            }
        }
        return nil
    }
}
