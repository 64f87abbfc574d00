import CacheWardenLedger
import CacheWardenFilesystem
import Glibc

/// Roots that are lost and come back: a root is taken back only when it is a real directory at its registered
/// path (no symlink in or above it), the very folder at that path is the folder of the filesystem it was
/// registered on (`MountIdentity`), and `RootGuard` accepts that folder again; otherwise it stays lost, with one
/// `error` line per reason and the reason in `status`.
extension Engine {
    /// How often a lost root's folder that was refused is judged again when nothing about it changed (a tag
    /// added, a mount inside it removed): judging reads the password database and the mount table.
    static let rejudgeInterval = Nanoseconds.span(seconds: 10)

    /// A registered root disappeared (deleted, moved away, unmounted, its watch dropped): reported once, then
    /// looked for every second (`takeBack`); once taken back it is re-read and a `ready` line follows.
    func rootLost(_ id: RootID, why: String) {
        assertOnQueue(queue)
        guard let rt = state.roots[id], rt.lost == nil else { return }
        state.roots[id]?.lost = "is gone (\(why))"
        updater.removeRoot(id, &state)
        settle()
        state.events.error(
            "registered directory \(rt.path) is gone (\(why)); watching for it to come back", dir: rt.name,
            kind: "root_lost")
        startRearmTimer()
    }

    /// Polls lost roots every second; the timer exists only while some root is lost.
    func startRearmTimer() {
        guard rearmTimer == nil else { return }
        let second = Nanoseconds.span(seconds: 1)
        rearmTimer = state.clock.schedule(
            at: Nanoseconds.after(state.clock.uptimeNanoseconds, second), repeating: second, on: queue
        ) {
            @Sendable [unowned self] in self.rearmLostRoots()
        }
    }

    private func rearmLostRoots() {
        guard running else { return }
        var stillLost = false
        var guardian: RootGuard?
        for rt in state.roots.all where rt.lost != nil {
            guard takeBack(rt, &guardian) else { stillLost = true; continue }
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

    /// Takes lost root `rt` back if what is at its path now may be taken (see the type's comment) and reads it;
    /// returns whether it did. A `create = true` root that is missing is made again (and tagged) in enforce
    /// mode. `guardian` is built once per pass, when first needed.
    private func takeBack(_ rt: RootRuntime, _ guardian: inout RootGuard?) -> Bool {
        if mode == .enforce && rt.settings.createIfMissing && PathResolver.isMissing(rt.path) {
            Self.createTagged(rt.path)
        }
        guard let st = try? Syscall.lstat(path: rt.path) else {
            if rt.lost?.hasPrefix("is gone") != true { state.roots[rt.id]?.lost = "is gone" }
            return false
        }
        if st.isSymlink { return stayLost(rt, "is now a symlink", kind: "root_symlink") }
        guard st.isDirectory else { return stayLost(rt, "is not a directory", kind: nil) }
        if (try? Syscall.canonicalPath(rt.path)) != rt.path {
            return stayLost(rt, "now leads through a symlink elsewhere", kind: "root_symlink")
        }
        // The folder is opened once: what is checked below is what is read.
        guard let (folder, identity) = try? openRoot(rt.path) else { return false }
        let now = state.clock.uptimeNanoseconds
        if let judged = rt.judged, judged.folder == identity, now - judged.at < Self.rejudgeInterval { return false }
        let check = guardian ?? state.settings.rootGuard
        guardian = check
        var dir = rt.settings
        dir.path = rt.path
        do throws(ConfigError) { _ = try state.settings.checkRoot(dir, guardian: check, folder: identity) } catch {
            state.roots[rt.id]?.judged = (identity, now)
            return stayLost(rt, "is refused now: \(error.message)", kind: "root_refused")
        }
        let here = MountIdentity(identity, path: rt.path, mounts: check.mounts)
        if let registered = rt.registeredOn, here.location == nil || here != registered {
            state.roots[rt.id]?.judged = (identity, now)
            return stayLost(
                rt,
                "is back on another filesystem or mount than the one it was registered on (`cachewarden reload` "
                    + "registers it anew)", kind: "root_moved")
        }
        return read(rt, folder: folder, on: here)
    }

    /// Reads taken-back root `rt` from `folder`, which is on `here` (recorded as where the root was registered if
    /// it never was: a root found after the start).
    private func read(_ rt: RootRuntime, folder: OwnedDescriptor, on here: MountIdentity) -> Bool {
        // It may be a mount now; the settings were accepted at registration, so the old route stands if not.
        if let newRoute = try? route(for: rt.settings, id: rt.id, path: rt.path) {
            state.roots[rt.id]?.route = newRoute
        }
        if rt.registeredOn == nil { state.roots[rt.id]?.registeredOn = here }
        state.roots[rt.id]?.judged = nil
        do throws(WardenError) { try recoverTrash(in: folder, at: rt.path) } catch {
            return stayLost(rt, "holds a \(TrashFolder.name) CacheWarden did not make", kind: "root_refused")
        }
        let outcome = updater.scanRoot(rt.id, ordered: needsOrder(rt.settings), folder: folder, &state)
        guard let failure = outcome.failure else { return true }
        updater.removeRoot(rt.id, &state)
        settle()
        let text = failure.description
        return stayLost(
            rt, text.hasPrefix(rt.path + " ") ? String(text.dropFirst(rt.path.count + 1)) : "cannot be read: \(text)",
            kind: nil)
    }

    /// Keeps `rt` lost for `why` (a phrase after its path), said once in an `error` line of `kind` (nil: none);
    /// returns false.
    private func stayLost(_ rt: RootRuntime, _ why: String, kind: String?) -> Bool {
        guard rt.lost != why else { return false }
        state.roots[rt.id]?.lost = why
        if let kind { state.events.error("\(rt.path) \(why); not taken back", dir: rt.name, kind: kind) }
        return false
    }
}
