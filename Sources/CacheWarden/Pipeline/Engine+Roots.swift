import Dispatch
import Glibc
import SystemPackage

/// Roots coming and going: registration, loss and return, overflow re-reads, reloads.
extension Engine {
    /// Registers a root: resolves its path, reads and watches its tree. In enforce mode a missing directory with
    /// `create = true` is created first; a dry run or a report creates nothing: such a root counts as empty and
    /// is picked up if it appears.
    func addRoot(_ dir: DirectorySettings) throws(WardenError) {
        guard state.roots.id(named: dir.name) == nil else { throw .duplicateDirectory(dir.name) }
        let absolute = PathResolver.absolute(dir.path, relativeTo: PathResolver.currentDirectory())
        // Refused paths (`RootGuard`) go before anything is created, read or watched.
        try guardRoot(dir, at: absolute, warn: true)
        if dir.createIfMissing && PathResolver.isMissing(absolute) {
            if mode == .enforce {
                PathResolver.createDirectories(absolute)
            } else {
                // Where it will be, symlinks above it resolved, as a found root's path is (the re-arm compares).
                var runtime = RootRuntime(id: state.roots.nextID, settings: dir, path: RootGuard.resolved(absolute),
                                          basis: state.settings.sizeBasis)
                runtime.lost = true
                state.roots.add(runtime)
                if backend != nil { startRearmTimer() }   // a one-shot report has no timers
                return
            }
        }
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(path: absolute) } catch { throw WardenError.path(error, absolute) }
        guard st.isDirectory else { throw .notADirectory(absolute) }
        let path: String
        do throws(Errno) { path = try Syscall.canonicalPath(absolute) } catch { throw WardenError.path(error, absolute) }
        // Once more where it leads now: a symlink swapped in since the check, or met by the creation, is caught.
        try guardRoot(dir, at: path, warn: false)
        let id = state.roots.nextID
        var runtime = RootRuntime(id: id, settings: dir, path: path, basis: state.settings.sizeBasis)
        runtime.route = try route(for: dir, id: id, path: path)
        state.roots.add(runtime)
        let outcome = updater.scanner.scanRoot(id, ordered: needsOrder(dir), &state)
        if let failure = outcome.failure {
            removeRoot(id)
            throw failure
        }
        settle()
    }

    /// Refuses `dir` at `path` when `RootGuard` does; logs the warning of a path `allow_any_path` accepts.
    private func guardRoot(_ dir: DirectorySettings, at path: String, warn: Bool) throws(WardenError) {
        var dir = dir
        dir.path = path
        do throws(ConfigError) {
            let warnings = try state.settings.checkRoots(only: [dir])
            if warn { for w in warnings { logger.warning("\(w)") } }
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
        let fanotifyProblem = backend.map { $0.availability(of: .fanotify, at: choice == .fanotify ? path : nil) }
            ?? "a one-shot report follows nothing"
        let (kind, pastLimit, filesystem) = BackendSelection.resolve(choice, path: path, fanotifyProblem: fanotifyProblem)
        if kind == .fanotify, backend != nil, let fanotifyProblem {
            throw .invalidSettings(ConfigError(message: "dir.\(dir.name): backend = fanotify, but \(fanotifyProblem); use inotify or auto"))
        }
        if let filesystem, backend != nil {
            logger.notice("dir \(dir.name): \(path) is on \(filesystem), whose changes inotify cannot see; polling it every \(interval)s (dir.\(dir.name).backend = inotify to override)")
        }
        return WatchRoute(root: id, backend: kind, pollInterval: interval, pastLimit: pastLimit)
    }

    /// Whether a root's files are kept in oldest-first order (only where a policy will take victims).
    func needsOrder(_ dir: DirectorySettings) -> Bool {
        mode != .observe && PolicySet.needsOrder(dir, state.settings)
    }

    /// Drops a root: its watches and its ledger.
    func removeRoot(_ id: RootID) {
        state.ledger.removeRoot(id)
        state.roots.remove(id)
        settle()
    }

    /// A registered root disappeared (deleted, moved away, its watch dropped): reported once, then polled every
    /// second until a real directory is back at its path; it is then re-read and a `ready` line follows.
    func rootLost(_ id: RootID, why: String) {
        guard let rt = state.roots[id], !rt.lost else { return }
        state.roots[id]?.lost = true
        state.ledger.removeRoot(id)
        settle()
        state.events.error("registered directory \(rt.path) is gone (\(why)); watching for it to come back", dir: rt.name, kind: "root_lost")
        startRearmTimer()
    }

    /// Polls lost roots every second; the timer exists only while some root is lost.
    private func startRearmTimer() {
        guard rearmTimer == nil else { return }
        let second: UInt64 = 1_000_000_000
        rearmTimer = state.clock.schedule(at: state.clock.uptimeNanoseconds + second, repeating: second, on: queue) {
            @Sendable [unowned self] in self.rearmLostRoots()
        }
    }

    private func rearmLostRoots() {
        guard running else { return }
        var stillLost = false
        for rt in state.roots.all where rt.lost {
            guard let st = try? Syscall.lstat(path: rt.path) else { stillLost = true; continue }
            // The path resolved when the root was registered: a symlink now at it, or in a folder above it,
            // would lead the watcher (and its trims) somewhere else.
            let leadsElsewhere = st.isDirectory && (try? Syscall.canonicalPath(rt.path)) != rt.path
            if st.isSymlink || leadsElsewhere {
                if !rt.reportedSymlink {
                    state.roots[rt.id]?.reportedSymlink = true
                    let what = st.isSymlink ? "is now a symlink" : "now leads through a symlink elsewhere"
                    state.events.error("\(rt.path) \(what); refusing to follow it", dir: rt.name, kind: "root_symlink")
                }
                stillLost = true
                continue
            }
            guard st.isDirectory else { stillLost = true; continue }
            // It may be a mount now; the settings were accepted at registration, so the old route stands if not.
            if let newRoute = try? route(for: rt.settings, id: rt.id, path: rt.path) { state.roots[rt.id]?.route = newRoute }
            let outcome = updater.scanner.scanRoot(rt.id, ordered: needsOrder(rt.settings), &state)
                guard outcome.failure == nil else {
                state.ledger.removeRoot(rt.id)
                state.roots[rt.id]?.lost = true
                settle()
                stillLost = true
                continue
            }
            state.roots[rt.id]?.reportedSymlink = false
            settle()
            emitReady(rt.id)
            enforce(.startup, roots: [rt.id])
        }
        if !stillLost {
            rearmTimer?.cancel()
            rearmTimer = nil
        }
        deliver()
    }

    /// The backend lost changes (inotify's queue overflowed): the running totals cannot be trusted, so every root
    /// is re-read from disk (watches are kept: the backend re-binds them), and a `rescan` line per directory
    /// reports the drift. Returns the roots re-read.
    func recoverFromOverflow() -> Set<RootID> {
        var reread = Set<RootID>()
        updater.reset(&state)
        state.events.emit(.overflow)
        for rt in state.roots.all where !rt.lost {
            guard let old = state.ledger.account(rt.id) else { continue }
            let outcome = updater.scanner.scanRoot(rt.id, ordered: needsOrder(rt.settings), &state)
                if let failure = outcome.failure {
                rootLost(rt.id, why: failure.description)
                continue
            }
            let new = state.ledger.account(rt.id)
            state.events.emit(.rescan(RescanReport(dir: rt.name, drift: old.total - (new?.total ?? 0),
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
        for dir in new.directories {
            if let before = oldByName[dir.name], let id = state.roots.id(named: dir.name) {
                if Self.canKeepLedger(before, dir, old, new) {
                    state.roots[id]?.settings = dir
                    state.roots[id]?.protect = GlobMatcher(dir.protect)
                    if before.spareOpen != dir.spareOpen { state.ledger.forgetOpens() }
                    if needsOrder(dir) { state.ledger.setOrdered(id, true) }
                    changed.append(id)
                    continue
                }
                if let t = state.totals(id) { state.events.emit(.stop(t)) }
                removeRoot(id)
            }
            do throws(WardenError) {
                try addRoot(dir)
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

    private static func canKeepLedger(_ a: DirectorySettings, _ b: DirectorySettings, _ old: WardenSettings, _ new: WardenSettings) -> Bool {
        PathResolver.absolute(a.path, relativeTo: "/") == PathResolver.absolute(b.path, relativeTo: "/")
            && a.order == b.order && a.exclude == b.exclude && a.oneFileSystem == b.oneFileSystem
            && a.countDirectories == b.countDirectories && old.sizeBasis == new.sizeBasis
            && (a.backend ?? old.backend) == (b.backend ?? new.backend)
            && (a.pollInterval ?? old.pollInterval) == (b.pollInterval ?? new.pollInterval)
            && (a.order == .opened || a.spareOpen) == (b.order == .opened || b.spareOpen)   // the watches' events
    }
}
