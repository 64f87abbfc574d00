import CInotify
import Foundation
import Glibc
import SystemPackage

/// Registration and scanning: the one place directories are read. Each directory gets its inotify watch *before*
/// its entries are read, so a file created between the two is either seen by the scan or reported by an event
/// (both are harmless: the ledger is idempotent per name).
extension Engine {
    /// Registers a root: resolves its path, opens it without following symlinks, scans and watches its tree.
    func addRoot(_ dir: DirectorySettings) throws(WardenError) {
        guard rootID(named: dir.name) == nil else { throw .duplicateDirectory(dir.name) }
        let absolute = PathResolver.absolute(dir.path, relativeTo: PathResolver.currentDirectory())
        if dir.createIfMissing { PathResolver.createDirectories(absolute) }
        var st = stat()
        if lstat(absolute, &st) != 0 { throw Self.pathError(errno, absolute) }
        guard st.isDirectory else { throw .notADirectory(absolute) }
        guard let resolved = realpath(absolute, nil) else { throw Self.pathError(errno, absolute) }
        let path = String(cString: resolved)
        free(resolved)

        let id = nextRootID
        nextRootID += 1
        let pathBytes = Array(path.utf8)
        roots[id] = RootRuntime(id: id, settings: dir, path: path, pathBytes: pathBytes,
                                protect: GlobMatcher(dir.protect), exclude: GlobMatcher(dir.exclude))
        rootOrder.append(id)
        do throws(WardenError) {
            try scanRoot(id)
        } catch {
            removeRoot(id)
            throw error
        }
    }

    /// (Re)builds a root's ledger from disk. Throws for problems with the root itself and for the watch limit.
    func scanRoot(_ id: Int32) throws(WardenError) {
        let rt = roots[id]!
        var st = stat()
        if lstat(rt.path, &st) != 0 { throw Self.pathError(errno, rt.path) }
        guard st.isDirectory else { throw .notADirectory(rt.path) }
        let node = ledger.addRoot(id, path: rt.pathBytes, ino: UInt64(st.st_ino), dev: UInt64(st.st_dev))
        try scan(node, path: rt.pathBytes, root: id, discovered: false, strict: true)
        roots[id]!.lost = false
    }

    /// Drops a root: its watches and its ledger.
    func removeRoot(_ id: Int32) {
        var dropped: [Int32] = []
        ledger.removeRoot(id, droppedWatches: &dropped)
        dropWatches(dropped, remove: true)
        roots[id] = nil
        rootOrder.removeAll { $0 == id }
    }

    func dropWatches(_ wds: [Int32], remove: Bool) {
        for wd in wds {
            wdToNode[wd] = nil
            if remove { inotify?.removeWatch(wd) }
        }
    }

    static func pathError(_ code: Int32, _ path: String) -> WardenError {
        switch code {
        case ENOENT: return .pathMissing(path)
        case ENOTDIR, ELOOP: return .notADirectory(path)
        case EACCES, EPERM: return .permissionDenied(path)
        default: return .system(operation: "stat", path: path, errno: code)
        }
    }

    /// What a failed `inotify_add_watch` means. `ENOSPC` is the per-user watch limit, never a full disk.
    func watchError(_ error: Errno, path: [UInt8]) -> WardenError {
        let display = Engine.display(path)
        switch error {
        case .noSpace: return .watchLimitReached(path: display, maxUserWatches: Int(cinotify_max_user_watches()))
        case .permissionDenied: return .permissionDenied(display)
        case .noSuchFileOrDirectory: return .pathMissing(display)
        case .notDirectory, .tooManySymbolicLinkLevels: return .notADirectory(display)
        default: return .system(operation: "inotify_add_watch", path: display, errno: error.rawValue)
        }
    }

    /// Maps a new watch descriptor to its directory node.
    func registerWatch(_ node: Int32, wd: Int32) {
        if let other = wdToNode[wd], other != node, ledger.node(other).live, ledger.node(other).wd == wd {
            // The same directory inode was still known under another node (a rename we did not pair): the new
            // place wins, the stale subtree goes (its watch descriptor is the one just returned, so keep it).
            var dropped: [Int32] = []
            ledger.removeSubtree(other, droppedWatches: &dropped)
            dropWatches(dropped.filter { $0 != wd }, remove: true)
        }
        wdToNode[wd] = node
        ledger.setWatch(node, wd: wd)
        blindNodes.remove(node)
    }

    /// Walkers of the initial scan: one per core (at least 2: one walks while the other waits on the disk).
    static let walkerThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)

    /// Watches and reads the tree under `top` with a `TreeWalker`, and builds the ledger from what it reports.
    /// The initial scan (`strict`) walks on a thread of its own while this queue fills the ledger; problems with
    /// `top` itself and the watch limit are then thrown. Run-time scans walk inline and turn problems into `error`
    /// events. `discovered` marks files found at run time (they get `write` lines).
    /// `openedTop` is a descriptor of `top` the caller already opened safely (owned by the scan); without it the
    /// top is opened through `VerifiedDirectories`.
    func scan(_ top: Int32, path topPath: [UInt8], root: Int32, discovered: Bool, strict: Bool,
              openedTop: Int32? = nil) throws(WardenError) {
        guard let rt = roots[root], let account = ledger.accounts[root], let inotify else {
            if let openedTop { Syscall.close(openedTop) }
            return
        }
        let topFD: Int32
        if let openedTop {
            topFD = openedTop
        } else {
            var directories = VerifiedDirectories(ledger: ledger, root: root, rootPath: rt.pathBytes)
            defer { directories.close() }
            do throws(Errno) { topFD = dup(try directories.open(top)) } catch {
                if strict { throw Self.pathError(error == .staleNFSFileHandle ? ENOENT : error.rawValue, Engine.display(topPath)) }
                reportUnreadable(top, root: root, error: error)
                return
            }
        }
        guard topFD >= 0 else { return }
        var mask = InotifyDescriptor.directoryEvents
        if rt.settings.order == .opened { mask |= CINOTIFY_IN_OPEN }
        let walker = TreeWalker(inotifyFD: inotify.fd, watchMask: mask, dev: account.dev, oneFileSystem: rt.settings.oneFileSystem,
                                exclude: rt.exclude, basis: settings.sizeBasis, order: rt.settings.order,
                                addWatchOverride: addWatchOverride)
        let topIno = ledger.node(top).ino
        let topRelative = ledger.relativePath(of: top)
        var nodes: [Int32: Int32] = [0: top]

        let start = TreeWalker.top(fd: topFD, ino: topIno, path: topPath, relative: topRelative)
        if strict {
            let channel = WalkChannel()
            let thread = Thread {
                walker.walkInParallel(start, threads: Self.walkerThreads,
                                      cancelled: { channel.cancelled.load(ordering: .relaxed) }) { channel.put($0) }
                channel.finish()
            }
            thread.name = "cachewarden.scan"
            thread.start()
            var failure: WardenError?
            while let walked = channel.take() {
                guard failure == nil else { continue }   // drain until the walker has stopped
                do throws(WardenError) { try apply(walked, top: top, root: root, nodes: &nodes, discovered: discovered, strict: true) } catch {
                    failure = error
                    channel.cancelled.store(true, ordering: .relaxed)
                }
            }
            if let failure { throw failure }
        } else {
            walker.walk(start, cancelled: { false }) { walked in
                try? apply(walked, top: top, root: root, nodes: &nodes, discovered: discovered, strict: false)
            }
        }
    }

    /// Puts one walked directory into the ledger: its node, its watch, its files.
    private func apply(_ d: TreeWalker.Directory, top: Int32, root: Int32, nodes: inout [Int32: Int32],
                       discovered: Bool, strict: Bool) throws(WardenError) {
        guard let rt = roots[root], ledger.accounts[root] != nil else { return }
        let node: Int32
        if d.id == 0 {
            node = top
        } else {
            guard let parent = nodes[d.parent], ledger.node(parent).live else { return }
            var dropped: [Int32] = []
            node = ledger.addDirectory(parent: parent, name: d.name, ino: d.ino, droppedWatches: &dropped).node
            dropWatches(dropped, remove: true)
        }
        nodes[d.id] = node
        if let error = d.watchError {
            let problem = watchError(error, path: d.path)
            var isLimit = false
            if case .watchLimitReached = problem { isLimit = true }
            if strict && (d.id == 0 || isLimit) { throw problem }
            if isLimit {
                // Not blind: the directory was read now and is re-read on a timer until a watch can be added.
                if blindNodes.insert(node).inserted {
                    emitError(problem.description + "; re-reading this directory every \(settings.watchLimitRescanInterval)s instead",
                              dir: rt.settings.name, file: Engine.display(ledger.relativePath(of: node)), kind: "watch_limit")
                }
                startBlindRescanTimer()
            } else if d.readError == nil {
                emitError(problem.description, dir: rt.settings.name,
                          file: Engine.display(ledger.relativePath(of: node)), kind: Self.issueKind(problem))
            }
        } else if d.wd >= 0 {
            registerWatch(node, wd: d.wd)
        }
        if let error = d.readError {
            if strict && d.id == 0 { throw Self.pathError(error.rawValue, Engine.display(d.path)) }
            reportUnreadable(node, root: root, error: error)
            return
        }
        if d.noBirthTime { reportNoBirthTime(root) }
        let keepOpened = rt.settings.order == .opened
        for file in d.files {
            let r = ledger.record(dir: node, name: file.name).record
            ledger.apply(file.status, to: r, keepOpenedAge: keepOpened)
            if discovered {
                touchedRoots.insert(root)
                emitWrite(r, root: root)
            }
        }
    }

    /// A directory that could not be opened: permission problems are reported; one that is gone, renamed or
    /// swapped since it was seen is left to its own events, and read again once they have been applied.
    private func reportUnreadable(_ node: Int32, root: Int32, error: Errno) {
        guard let rt = roots[root] else { return }
        if error != .noSuchFileOrDirectory && error != .staleNFSFileHandle && error != .tooManySymbolicLinkLevels {
            emitError("cannot read directory: \(error)", dir: rt.settings.name,
                      file: Engine.display(ledger.relativePath(of: node)),
                      kind: error == .permissionDenied ? "permission" : "scan")
        }
        if node != ledger.accounts[root]?.rootNode { unreadNodes.insert(node) }
    }

    private func reportNoBirthTime(_ root: Int32) {
        guard let rt = roots[root], !rt.reportedNoBirthTime else { return }
        roots[root]!.reportedNoBirthTime = true
        emitError("this filesystem records no birth time: order = btime falls back to mtime", dir: rt.settings.name, kind: "btime")
    }

    /// The ledger's view of a stat of a file in `dirfd` (see `TreeWalker.status`).
    func fileStatus(_ st: stat, root: Int32, dirfd: Int32, name: UnsafePointer<CChar>?) -> FileStatus {
        var noBirthTime = false
        let status = TreeWalker.status(st, basis: settings.sizeBasis, order: roots[root]!.settings.order, dirfd: dirfd,
                                       name: name, noBirthTime: &noBirthTime)
        if noBirthTime { reportNoBirthTime(root) }
        return status
    }

    func emitWrite(_ r: Int32, root: Int32) {
        guard let rt = roots[root], let account = ledger.accounts[root], let inode = ledger.inode(ofRecord: r) else { return }
        emit(.write(FileWritten(dir: rt.settings.name, file: Engine.display(ledger.relativePath(ofRecord: r)),
                                size: inode.bytes, total: account.total, files: account.files, quota: rt.settings.quota)))
    }

    static func issueKind(_ error: WardenError) -> String {
        switch error {
        case .watchLimitReached: "watch_limit"
        case .permissionDenied: "permission"
        case .pathMissing: "missing"
        default: "scan"
        }
    }
}
