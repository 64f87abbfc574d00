import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch
import Glibc
import SystemPackage

/// Roots coming and going: registration, loss and return, overflow re-reads, reloads.
extension Engine {
    /// Registers a root: resolves its path, reads and watches its tree. In enforce mode a missing directory with
    /// `create = true` is created (and tagged: `CacheDirTag.write(in:)`) first; a dry run or a report creates
    /// nothing: such a root counts as empty and is picked up if it appears. `guardian` is the `RootGuard` of the
    /// registration pass (one for all the roots of a start or a reload).
    func addRoot(_ dir: DirectorySettings, guardian: RootGuard? = nil) throws(WardenError) {
        guard state.roots.id(named: dir.name) == nil else { throw .duplicateDirectory(dir.name) }
        let guardian = guardian ?? state.settings.rootGuard
        var dir = dir
        dir.path = PathResolver.absolute(dir.path, relativeTo: PathResolver.currentDirectory())
        // Refused paths (`RootGuard`) go before anything is created, read or watched.
        try guardRoot(dir, warn: true, guardian)
        if dir.createIfMissing && PathResolver.isMissing(dir.path) {
            if mode != .enforce {
                // Where it will be, symlinks above it resolved, as a found root's path is (the re-arm compares).
                var runtime = RootRuntime(
                    id: state.roots.nextID, settings: dir, path: RootGuard.resolved(dir.path),
                    basis: state.settings.sizeBasis)
                runtime.lost = "is gone (not created yet: a dry run or a report creates nothing)"
                state.roots.add(runtime)
                if backend != nil { startRearmTimer() } // a one-shot report has no timers
                return
            }
            Self.createTagged(dir.path)
        }
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(path: dir.path) } catch { throw WardenError.path(error, dir.path) }
        guard st.isDirectory else { throw .notADirectory(dir.path) }
        let path: String
        do throws(Errno) { path = try Syscall.canonicalPath(dir.path) } catch {
            throw WardenError.path(error, dir.path)
        }
        // The folder is opened once, and that very folder is judged again and read: a symlink or another folder
        // swapped in since the first check, or met by the creation, is caught.
        let (folder, identity) = try openRoot(path)
        try guardRoot(dir, at: path, folder: identity, warn: false, guardian)
        try recoverTrash(in: folder, at: path)
        let id = state.roots.nextID
        var runtime = RootRuntime(id: id, settings: dir, path: path, basis: state.settings.sizeBasis)
        runtime.route = try route(for: dir, id: id, path: path)
        runtime.registeredOn = MountIdentity(identity, path: path, mounts: guardian.mounts)
        state.roots.add(runtime)
        let outcome = updater.scanRoot(id, ordered: needsOrder(dir), folder: folder, &state)
        if let failure = outcome.failure {
            removeRoot(id)
            throw failure
        }
        settle()
    }

    /// The root at `path` (canonical) opened without following any symlink, and what it is.
    func openRoot(_ path: String) throws(WardenError) -> (OwnedDescriptor, FolderIdentity) {
        let folder: OwnedDescriptor
        do throws(Errno) { folder = try Syscall.openRoot(path: path) } catch {
            throw WardenError.path(error, path)
        }
        guard let identity = FolderIdentity(descriptor: folder.fd) else { throw .notADirectory(path) }
        return (folder, identity)
    }

    /// Empties what an interrupted run left in the root's trash (enforce mode only: a report or a dry run deletes
    /// nothing); refuses a root where something CacheWarden did not make has the trash's name.
    func recoverTrash(in folder: OwnedDescriptor, at path: String) throws(WardenError) {
        guard mode == .enforce else { return }
        do throws(TrashFolder.Problem) {
            let removed = try TrashFolder.recover(in: folder.fd)
            if removed > 0 { logger.notice("\(path): emptied the trash an interrupted run left (\(removed) entries)") }
        } catch {
            if error == .foreign { throw .foreignTrash(path) }
            logger.warning("\(path): cannot empty \(TrashFolder.name): \(error)")
        }
    }

    /// `mkdir -p` of a root to be created, never through a symlink; the folder this call makes itself (not one
    /// another process made in between) is tagged as a cache, so that it is accepted at the next start wherever
    /// it is. A failure shows in the checks that follow.
    static func createTagged(_ path: String) {
        guard let (folder, made) = PathResolver.makeDirectories(path), made else { return }
        try? CacheDirTag.write(in: folder)
    }

    /// Refuses `dir` when `RootGuard` does (at `path`, by default its own; `folder`: what was opened there);
    /// logs the warning of a path `allow_any_path` accepts.
    private func guardRoot(
        _ dir: DirectorySettings, at path: String? = nil, folder: FolderIdentity? = nil, warn: Bool,
        _ guardian: RootGuard
    ) throws(WardenError) {
        var dir = dir
        if let path { dir.path = path }
        do throws(ConfigError) {
            if let warning = try state.settings.checkRoot(dir, guardian: guardian, folder: folder), warn {
                logger.warning("\(warning)")
            }
        } catch { throw .invalidSettings(error) }
    }

    /// The backend serving a root at `path`: its own `backend`, else the global one; `auto` polls a network or
    /// FUSE filesystem (`BackendSelection`) and says so in one line on the log (stderr), not as an event: nothing
    /// failed, and `status` and the metrics show each root's backend. A root that asks for fanotify where it
    /// cannot be had is refused (the user asked for it: falling back silently would hide why).
    func route(for dir: DirectorySettings, id: RootID, path: String) throws(WardenError) -> WatchRoute {
        let interval = dir.pollInterval ?? state.settings.pollInterval
        let choice = dir.backend ?? state.settings.backend
        // Asked for by name, fanotify is tried on the root's filesystem at once; `auto` only needs it to be had at
        // all (a directory past the limit that it cannot mark is polled).
        let fanotifyProblem =
            backend.map { $0.availability(of: .fanotify, at: choice == .fanotify ? path : nil) }
            ?? "a one-shot report follows nothing"
        let (kind, pastLimit, filesystem) = BackendSelection.resolve(
            choice, path: path, fanotifyProblem: fanotifyProblem)
        if kind == .fanotify, backend != nil, let fanotifyProblem {
            throw .invalidSettings(
                ConfigError(message: "dir.\(dir.name): backend = fanotify, but \(fanotifyProblem); use inotify or auto")
            )
        }
        if let filesystem, backend != nil {
            logger.notice(
                "dir \(dir.name): \(path) is on \(filesystem), whose changes inotify cannot see; polling it every \(interval)s (dir.\(dir.name).backend = inotify to override)"
            )
        }
        return WatchRoute(root: id, backend: kind, pollInterval: interval, pastLimit: pastLimit)
    }

    /// Whether a root's files are kept in oldest-first order (only where a policy will take victims).
    func needsOrder(_ dir: DirectorySettings) -> Bool {
        mode != .observe && PolicySet.needsOrder(dir, state.settings)
    }

    /// Drops a root: its watches and its ledger.
    func removeRoot(_ id: RootID) {
        updater.removeRoot(id, &state)
        state.roots.remove(id)
        settle()
    }

    /// The backend lost changes (inotify's queue overflowed): the running totals cannot be trusted, so every root
    /// is re-read from disk (watches are kept: the backend re-binds them), and a `rescan` line per directory
    /// reports the drift. Returns the roots re-read.
    func recoverFromOverflow() -> Set<RootID> {
        var reread = Set<RootID>()
        updater.reset(&state)
        state.events.emit(.overflow)
        for rt in state.roots.all where rt.lost == nil {
            guard let old = state.ledger.account(rt.id) else { continue }
            // Replaced while its changes were lost: a root that comes back is taken back only after the checks.
            guard let (folder, identity) = try? openRoot(rt.path), identity.device == old.dev,
                identity.inode == state.ledger.node(old.rootNode).ino
            else {
                rootLost(rt.id, why: "replaced while changes were lost")
                continue
            }
            let outcome = updater.scanRoot(rt.id, ordered: needsOrder(rt.settings), folder: folder, &state)
            if let failure = outcome.failure {
                rootLost(rt.id, why: failure.description)
                continue
            }
            let new = state.ledger.account(rt.id)
            state.events.emit(
                .rescan(
                    RescanReport(
                        dir: rt.name, drift: old.total - (new?.total ?? 0),
                        total: new?.total ?? 0, files: new?.files ?? 0)))
            reread.insert(rt.id)
        }
        settle()
        return reread
    }

    /// Applies a validated new configuration (see `Watcher.reload`): removed directories stop, added ones start,
    /// changed ones take their new settings at once (a lowered quota trims immediately). A directory whose path,
    /// order, excludes, filesystem rule or size basis changed is re-read.
    func reload(_ newSettings: WardenSettings) {
        assertOnQueue(queue)
        let new = newSettings.resolved()
        let old = state.settings
        let oldByName = Dictionary(uniqueKeysWithValues: old.directories.map { ($0.name, $0) })
        let newNames = Set(new.directories.map(\.name))
        for rt in state.roots.all where !newNames.contains(rt.name) {
            if let t = state.totals(rt.id) { state.events.emit(.stop(t)) }
            removeRoot(rt.id)
        }
        state.settings = new
        policies = PolicySet(mode == .observe ? WardenSettings() : new)
        for w in wakeUps.values { w.timer.cancel() }
        wakeUps.removeAll()
        var changed: [RootID] = []
        let guardian = new.rootGuard
        for dir in new.directories {
            if let before = oldByName[dir.name], let id = state.roots.id(named: dir.name) {
                if Self.canKeepLedger(before, dir, old, new) {
                    state.roots[id]?.settings = dir
                    state.roots[id]?.protect = RootRuntime.protectMatcher(dir)
                    state.roots[id]?.lockFiles = GlobMatcher(dir.clientLock?.protectGlobs ?? [])
                    if before.spareOpen != dir.spareOpen { state.ledger.forgetOpens() }
                    if needsOrder(dir) { state.ledger.setOrdered(id, true) }
                    // A lost root is registered anew: judged again at once, and taken back wherever it now is
                    // (another mount) if the rule accepts it; else it stays lost.
                    if state.roots[id]?.lost != nil {
                        state.roots[id]?.registeredOn = nil
                        state.roots[id]?.judged = nil
                    }
                    changed.append(id)
                    continue
                }
                if let t = state.totals(id) { state.events.emit(.stop(t)) }
                removeRoot(id)
            }
            do throws(WardenError) {
                try addRoot(dir, guardian: guardian)
                if let id = state.roots.id(named: dir.name) {
                    emitReady(id)
                    changed.append(id)
                }
            } catch {
                state.events.error(error.description, dir: dir.name, kind: "reload")
            }
        }
        enforce(.reload, roots: changed)
        startTimers()
    }

    private static func canKeepLedger(
        _ a: DirectorySettings, _ b: DirectorySettings, _ old: WardenSettings, _ new: WardenSettings
    ) -> Bool {
        PathResolver.absolute(a.path, relativeTo: "/") == PathResolver.absolute(b.path, relativeTo: "/")
            && a.order == b.order && a.exclude == b.exclude && a.oneFileSystem == b.oneFileSystem
            && a.countDirectories == b.countDirectories && old.sizeBasis == new.sizeBasis
            && (a.backend ?? old.backend) == (b.backend ?? new.backend)
            && (a.pollInterval ?? old.pollInterval) == (b.pollInterval ?? new.pollInterval)
            && (a.order == .opened || a.spareOpen) == (b.order == .opened || b.spareOpen) // the watches' events
    }
}
