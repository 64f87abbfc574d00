import CWardenShims
import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Taking a directory's client locks: each lock file looked at first (`fstatat` without following: only a regular
/// file is ever opened, never a device or a FIFO), opened as it is (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`, read-write
/// when this process may write it, else read-only; never created, never truncated, never written), locked without
/// blocking, then checked to be still the file at its path — one replaced between the open and the lock is
/// released and counts as busy: the client that replaced it holds the new one.
extension ClientLocks {
    /// Which of the locks a take concerns.
    enum Scope: Equatable {
        /// The root-level locks (those without `{unit}`): before a trim of the root.
        case root
        /// The per-unit locks of one unit, by its path relative to the root (bytes): just before it is deleted.
        case unit([UInt8])
    }

    /// The path of `lock` to take for `scope`, `{unit}` filled in with literal components; nil when the scope does
    /// not concern it.
    func components(of lock: ClientLock, _ scope: Scope) -> [LockComponent]? {
        let parts = lock.components
        switch scope {
        case .root: return lock.isPerUnit ? nil : parts.map { LockComponent(text: $0) }
        case .unit(let unit):
            guard lock.isPerUnit else { return nil }
            return parts.flatMap { part -> [LockComponent] in
                part == ClientLock.unitPlaceholder
                    ? unit.split(separator: PathBytes.separator).map { LockComponent(literal: $0) }
                    : [LockComponent(text: part)]
            }
        }
    }

    /// Takes the locks of `scope`, in order, under the root at the canonical `rootPath`, never blocking: all of
    /// them, or none (the first one busy releases those taken before it). `registry`: the locks this process holds
    /// already (a file held there is shared, never taken twice). `findHolders`: look in `/proc` for who holds a busy
    /// lock (what a `deferred` line names). `maxFiles`: the most lock files the scope may name (each is held open
    /// while taken); more is `unusable`, found before any is opened. `onLocked`: a test's seam, called between the
    /// lock and the check that the path still names the file.
    func tryTake(
        rootPath: String, dir: String, scope: Scope, registry: LockFileRegistry = LockFileRegistry(),
        findHolders: Bool = true, maxFiles: Int? = nil,
        onLocked: ((LockTarget) -> Void)? = nil
    ) -> Result<HeldClientLocks, ClientLockBusy> {
        let held = HeldClientLocks(registry: registry)
        var files = 0
        for lock in locks {
            guard let parts = components(of: lock, scope) else { continue }
            let resolution: LockResolution
            do throws(LockPathUnusable) { resolution = try LockTargets.resolve(parts, rootPath: rootPath) } catch {
                held.release()
                return .failure(ClientLockBusy(dir: dir, lock: error.display, why: .unusable, detail: error.detail))
            }
            files += resolution.targets.count
            if let maxFiles, files > maxFiles {
                held.release()
                let shown = PathBytes.display(Array(parts.map(\.bytes).joined(separator: [PathBytes.separator])))
                return .failure(
                    ClientLockBusy(dir: dir, lock: shown, why: .unusable, detail: Self.tooMany(files, maxFiles)))
            }
            held.watch(resolution)
            for target in resolution.targets {
                if let busy = take(
                    target, lock.kind, into: held, dir: dir, findHolders: findHolders, onLocked: onLocked)
                {
                    held.release()
                    return .failure(busy)
                }
            }
        }
        return .success(held)
    }

    /// Why a unit's lock files cannot all be held open at once.
    static func tooMany(_ files: Int, _ budget: Int) -> String {
        "its \(files) lock files are more than the \(budget) descriptors a trim holds for units' locks at once "
            + "(a quarter of the open-file limit, RLIMIT_NOFILE); the unit stays: raise the limit (LimitNOFILE=) to have it trimmed"
    }

    /// Takes one lock file into `held`; the reason when it cannot be taken (nil: taken, or nothing to take).
    private func take(
        _ target: LockTarget, _ kind: ClientLock.Kind, into held: HeldClientLocks, dir: String,
        findHolders: Bool, onLocked: ((LockTarget) -> Void)?
    ) -> ClientLockBusy? {
        let file: Opened.File
        switch Self.open(target) {
        case .absent:
            if target.literal { held.addAbsent(target) }
            return nil
        case .skip: return nil
        case .unusable(let detail):
            return ClientLockBusy(dir: dir, lock: target.display, why: .unusable, detail: detail)
        case .replaced: return ClientLockBusy(dir: dir, lock: target.display, why: .replaced)
        case .file(let opened): file = opened
        }
        let key = LockFileRegistry.Key(file: file.identity, kind: kind)
        if held.registry.retain(key) {
            // Held by this process already (another root's take, or this root's): shared, not taken again (this
            // descriptor closes as `file` goes).
            held.add(key, target)
            return nil
        }
        do throws(Errno) {
            try file.descriptor.borrow { (fd) throws(Errno) in try Self.lock(fd, kind, writable: file.writable) }
        } catch {
            guard [.wouldBlock, .resourceTemporarilyUnavailable, .permissionDenied].contains(error) else {
                return ClientLockBusy(
                    dir: dir, lock: target.display, why: .unusable,
                    detail: Self.lockFailure(error, writable: file.writable))
            }
            return ClientLockBusy(
                dir: dir, lock: target.display, why: .held,
                holders: findHolders ? file.descriptor.borrow { LockHolders.of($0) } : [])
        }
        onLocked?(target)
        // Still the file at its path? One removed or replaced meanwhile is not the one the next client locks.
        guard let now = try? target.lstat(), LockFileRegistry.FileIdentity(now) == file.identity else {
            return ClientLockBusy(dir: dir, lock: target.display, why: .replaced)
        }
        held.registry.add(key, file: file.descriptor)
        held.add(key, target)
        return nil
    }

    /// What opening a target found.
    enum Opened {
        struct File {
            /// Closed as its last holder goes: a lock taken on it is then released.
            let descriptor: OwnedDescriptor
            let identity: LockFileRegistry.FileIdentity
            /// Open read-write (an OFD lock is then a write lock).
            let writable: Bool
        }
        case file(File)
        /// Not there: no client made it.
        case absent
        /// Matched by a pattern but not a regular file: not a lock.
        case skip
        /// Another file than the one looked at was opened (replaced in between).
        case replaced
        case unusable(String)
    }

    /// Opens a lock file as it is: looked at first, and opened only when it is a regular file (never a symlink,
    /// a device or a FIFO), read-write when this process may (else read-only), never creating, never waiting.
    static func open(_ target: LockTarget) -> Opened {
        let st: stat
        do throws(Errno) { st = try target.lstat() } catch {
            return error == .noSuchFileOrDirectory ? .absent : .unusable("it cannot be opened (\(error))")
        }
        guard st.isRegularFile else {
            return target.literal
                ? .unusable(
                    st.isSymlink
                        ? "it is a symlink; a lock file is never followed through one"
                        : "it is \(FileContents.kind(of: st.st_mode)), not a regular file") : .skip
        }
        var writable = true
        let fd: OwnedDescriptor
        do throws(Errno) {
            do throws(Errno) { fd = try target.open(O_RDWR) } catch {
                guard [.permissionDenied, .notPermitted, .readOnlyFileSystem, .textFileBusy].contains(error) else {
                    throw error
                }
                writable = false
                fd = try target.open(O_RDONLY)
            }
        } catch {
            if error == .noSuchFileOrDirectory || error == .tooManySymbolicLinkLevels {
                return target.literal ? .replaced : .skip
            }
            return .unusable("it cannot be opened (\(error))")
        }
        guard let opened = try? Syscall.fstat(fd.fd), opened.isRegularFile,
            LockFileRegistry.FileIdentity(opened) == LockFileRegistry.FileIdentity(st)
        else {
            return target.literal ? .replaced : .skip
        }
        return .file(Opened.File(descriptor: fd, identity: LockFileRegistry.FileIdentity(st), writable: writable))
    }

    /// Why a lock could not be had at all. NFS makes `flock` a lock on the server, which an exclusive one needs
    /// the file open for writing for (`EBADF` on a read-only open): this process may only read the lock file there.
    private static func lockFailure(_ error: Errno, writable: Bool) -> String {
        if error == .badFileDescriptor && !writable {
            return "locking it needs it open for writing here (NFS), and this process may only read it"
        }
        return "locking it failed: \(error)"
    }

    /// `flock(LOCK_EX | LOCK_NB)`, or an OFD lock over the whole file: a write lock when the file is open
    /// read-write (it excludes a client's read locks too), else a read lock.
    private static func lock(_ fd: FileDescriptor, _ kind: ClientLock.Kind, writable: Bool) throws(Errno) {
        switch kind {
        case .flock: _ = try Syscall.retrying { flock(fd.rawValue, LOCK_EX | LOCK_NB) }
        case .ofd: _ = try Syscall.retrying { cwsys_ofd_try_lock(fd.rawValue, writable ? 1 : 0) }
        }
    }

    /// What is wrong with the lock files named outright, as `check` reports it (nil: each is a regular file this
    /// process can open, or is not there). Patterns are not looked at: they name whatever is there.
    func problem(rootPath: String) -> String? {
        for lock in locks where !lock.isPattern {
            let resolution: LockResolution
            do throws(LockPathUnusable) {
                resolution = try LockTargets.resolve(
                    lock.components.map { LockComponent(text: $0) }, rootPath: rootPath)
            } catch {
                return "\(lock.path): \(error.detail)"
            }
            for target in resolution.targets {
                switch Self.open(target) {
                case .file, .absent, .skip, .replaced: break // a file opened closes as it goes
                case .unusable(let detail): return "\(target.display): \(detail)"
                }
            }
        }
        return nil
    }
}
