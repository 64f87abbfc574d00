import CacheWardenLedger
import CacheWardenFilesystem
import SystemPackage

/// Filing what a walk found: nodes, watches, files, and the problems met on the way.
extension TreeScanner {
    /// Puts one walked directory into the ledger: its node, its watch, its files.
    func file(
        _ d: WalkedDirectory<WatchAttempt>, root: RootID, nodes: inout WalkNodes, discovered: Bool, strict: Bool,
        _ state: inout PipelineState, _ outcome: inout Outcome
    ) throws(WardenError) {
        guard let order = state.roots[root]?.settings.order, state.ledger.account(root) != nil else { return }
        let node: NodeID
        if d.id == 0 {
            guard let top = nodes[0] else { return }
            node = top
        } else {
            guard let parent = nodes[d.parent], state.ledger.isLive(parent) else { return }
            let added = d.name.withUnsafeBytes {
                state.ledger.addDirectory(parent: parent, name: $0, ino: d.ino, bytes: d.bytes)
            }
            outcome.stale.appendIfAny(added.stale)
            node = added.node
        }
        nodes[d.id] = node
        if d.id == 0 { state.ledger.setDirectoryBytes(node, d.bytes) }
        outcome.stale.appendIfAny(try fileWatch(d, node: node, root: root, strict: strict, &state))
        if let error = d.readError {
            if strict && d.id == 0 {
                throw WardenError.path(error, PathBytes.display(state.ledger.absolutePath(of: node)))
            }
            reportUnreadable(node, root: root, error: error, &state, &outcome)
            return
        }
        if d.noBirthTime { reportNoBirthTime(root, &state) }
        let keepOpened = order == .opened
        let rereadTop = outcome.rereading && d.id == 0
        if rereadTop { outcome.topFiles = Set(minimumCapacity: d.files.count) }
        if d.files.count > 8 { state.ledger.reserveRecords(d.files.count, in: node) }
        for f in d.files {
            let (r, isNew) = d.withName(f) { state.ledger.record(in: node, named: $0) }
            let status = FileStatus(f.status)
            outcome.stale.appendIfAny(state.ledger.apply(status, to: r, keepOpenedAge: keepOpened))
            if rereadTop { outcome.topFiles?.insert(r) }
            if discovered && (isNew || !outcome.rereading) {
                state.emitWrite(r, root: root)
                outcome.announced.append((r, status))
            }
        }
    }

    /// Has the directory's watch bound to its node, or reports why it has none. Returns the names to stat again
    /// that a stale subtree it displaced leaves behind.
    private func fileWatch(
        _ d: WalkedDirectory<WatchAttempt>, node: NodeID, root: RootID, strict: Bool,
        _ state: inout PipelineState
    ) throws(WardenError) -> [RecordID] {
        guard let port = watching, let watch = d.watch else { return [] }
        var left: [RecordID] = []
        switch watch {
        case .watched, .servedPastLimit:
            state.ledger.setWatched(node, true)
            if case .watched(let stale?) = port.adopt(watch, node), stale != node, state.ledger.isLive(stale) {
                // The same directory was still known under another node (a rename we did not pair): the new
                // place wins, and the stale subtree goes.
                left = state.ledger.removeSubtree(stale)
            }
            if case .servedPastLimit(let handle, let limit) = watch {
                reportPastLimit(node, root: root, limit: limit, by: handle.backend, &state)
            }
        case .limitReached(let limit):
            // Nothing else could serve it: the directory was read now and is not followed.
            let problem = WardenError.watchLimitReached(
                path: PathBytes.display(state.ledger.absolutePath(of: node)), maxUserWatches: limit)
            if strict { throw problem }
            state.events.error(
                problem.description, dir: state.roots[root]?.name,
                file: PathBytes.display(state.ledger.relativePath(of: node)), kind: "watch_limit")
        case .failed(let error):
            let problem = WardenError.path(error, PathBytes.display(state.ledger.absolutePath(of: node)))
            if strict && d.id == 0 { throw problem }
            if d.readError == nil {
                state.events.error(
                    problem.description, dir: state.roots[root]?.name,
                    file: PathBytes.display(state.ledger.relativePath(of: node)), kind: problem.issueKind)
            }
        }
        return left
    }

    /// The first directory of a root served past inotify's watch limit: one `watch_limit` line naming the backend
    /// that serves it and those that follow.
    private func reportPastLimit(
        _ node: NodeID, root: RootID, limit: Int, by kind: BackendKind, _ state: inout PipelineState
    ) {
        guard let rt = state.roots[root], !rt.reportedWatchLimit else { return }
        state.roots[root]?.reportedWatchLimit = true
        let problem = WardenError.watchLimitReached(
            path: PathBytes.display(state.ledger.absolutePath(of: node)), maxUserWatches: limit)
        let instead =
            kind == .poll
            ? "polling them every \(rt.route.pollInterval)s" : "following them with fanotify (one mark per filesystem)"
        state.events.error(
            problem.description + "; this and the next directories past it are served by \(kind.rawValue): \(instead)",
            dir: rt.name, file: PathBytes.display(state.ledger.relativePath(of: node)), kind: "watch_limit")
    }

    /// A directory that could not be read: permission problems are reported; one that is gone, renamed or
    /// swapped since it was seen is left to its own events, and read again once they have been applied.
    func reportUnreadable(
        _ node: NodeID, root: RootID, error: Errno, _ state: inout PipelineState, _ outcome: inout Outcome
    ) {
        let transient =
            error == .noSuchFileOrDirectory || error == .staleNFSFileHandle || error == .tooManySymbolicLinkLevels
        if transient {
            if node != state.ledger.account(root)?.rootNode { outcome.unread.append(node) }
            return
        }
        state.events.error(
            "cannot read directory: \(error)", dir: state.roots[root]?.name,
            file: PathBytes.display(state.ledger.relativePath(of: node)),
            kind: error == .permissionDenied ? "permission" : "scan")
    }

    func reportNoBirthTime(_ root: RootID, _ state: inout PipelineState) {
        guard let rt = state.roots[root], !rt.reportedNoBirthTime else { return }
        state.roots[root]?.reportedNoBirthTime = true
        state.events.error(
            "this filesystem records no birth time: order = btime falls back to mtime", dir: rt.name, kind: "btime")
    }
}
