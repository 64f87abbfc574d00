import Dispatch
import Glibc

/// A registered root that disappears (deleted, moved away, replaced by a symlink) is reported once and polled
/// every second until a real directory is back at its path; then it is re-read and a `ready` line follows.
/// The poll timer exists only while some root is lost.
extension Engine {
    func rootLost(_ id: Int32, why: String) {
        guard let rt = roots[id], !rt.lost else { return }
        roots[id]!.lost = true
        var dropped: [Int32] = []
        ledger.removeRoot(id, droppedWatches: &dropped)
        dropWatches(dropped, remove: true)
        emitError("registered directory \(rt.path) is gone (\(why)); watching for it to come back", dir: rt.settings.name, kind: "root_lost")
        startRearmTimer()
    }

    private func startRearmTimer() {
        guard rearmTimer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1), leeway: .milliseconds(100))
        timer.setEventHandler { @Sendable [unowned self] in self.rearmLostRoots() }
        timer.resume()
        rearmTimer = timer
    }

    private func rearmLostRoots() {
        guard running else { return }
        var stillLost = false
        for id in rootOrder {
            guard let rt = roots[id], rt.lost else { continue }
            var st = stat()
            if lstat(rt.path, &st) != 0 { stillLost = true; continue }
            if st.isSymlink {
                if !(roots[id]!.reportedSymlink) {
                    roots[id]!.reportedSymlink = true
                    emitError("\(rt.path) is now a symlink; refusing to follow it", dir: rt.settings.name, kind: "root_symlink")
                }
                stillLost = true
                continue
            }
            guard st.isDirectory else { stillLost = true; continue }
            do throws(WardenError) {
                try scanRoot(id)
                roots[id]!.reportedSymlink = false
                emitReady(id)
                enforceQuota(id)
            } catch {
                var dropped: [Int32] = []
                ledger.removeRoot(id, droppedWatches: &dropped)
                dropWatches(dropped, remove: true)
                stillLost = true
            }
        }
        if !stillLost {
            rearmTimer?.cancel()
            rearmTimer = nil
        }
        deliver()
    }
}
