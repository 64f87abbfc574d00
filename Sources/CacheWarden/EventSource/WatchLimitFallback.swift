import Dispatch
import Glibc

/// When `inotify_add_watch` fails with `ENOSPC` at run time (the per-user watch limit, not a full disk), the
/// directory is not left blind: it is read at once, reported once with the limit and the sysctl to raise it, and
/// re-read on a timer (`watchLimitRescanInterval`) — which also retries the watch, so raising the limit heals it.
/// The timer exists only while some directory is unwatched.
extension Engine {
    func startBlindRescanTimer() {
        guard blindTimer == nil, running || inotify != nil else { return }
        let seconds = Int(max(1, settings.watchLimitRescanInterval))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .seconds(seconds), repeating: .seconds(seconds), leeway: .milliseconds(200))
        timer.setEventHandler { @Sendable [unowned self] in
            guard self.running else { return }
            self.rescanBlindDirectories()
            self.enforcePolicies()
            self.deliver()
        }
        timer.resume()
        blindTimer = timer
    }

    /// Re-reads each unwatched directory: its file records are rebuilt from disk, vanished subdirectories dropped.
    func rescanBlindDirectories() {
        for n in blindNodes {
            let node = ledger.node(n)
            guard node.live, node.wd < 0, roots[node.root] != nil else { blindNodes.remove(n); continue }
            for r in node.files.values { ledger.removeRecord(r) }
            let path = ledger.path(of: n)
            for (name, child) in node.subdirs {
                var childPath = path
                childPath.append(UInt8(ascii: "/"))
                childPath.append(contentsOf: name.bytes)
                var st = stat()
                let gone = childPath.withCString { lstat($0, &st) } != 0 || !st.isDirectory
                if gone { removeDirectory(child) }
            }
            touchedRoots.insert(node.root)
            try? scan(n, path: path, root: node.root, discovered: false, strict: false)
        }
        if blindNodes.isEmpty {
            blindTimer?.cancel()
            blindTimer = nil
        }
    }
}
