import CInotify
import Dispatch
import Glibc
import SystemPackage

/// The read loop and the routing of inotify records into the ledger.
///
/// A batch is up to `maxReadsPerBatch` reads. Records only adjust the ledger's structure (names, renames,
/// deletions) as they come; every file a batch touched is then `stat`ed once at the end of the batch, so a file
/// written with a thousand `write(2)` calls costs one stat, not a thousand. Stats are the truth: a name that
/// vanished before its stat is dropped, and the records that follow put it back where it went.
extension Engine {
    static let maxReadsPerBatch = 16

    /// After a batch that found records, the read source rests this long before the next read, so a busy writer's
    /// records arrive in batches of hundreds instead of a wake-up (and a hop to the callback queue) per handful.
    /// It bounds the added latency; an idle watcher is not affected (nothing is scheduled without records), and
    /// 2 ms holds at most ~400 records at 200k records/s — far below the kernel's 16,384-record queue.
    static let coalescingDelay: DispatchTimeInterval = .milliseconds(2)

    /// The read source's handler: drain, apply, stat, enforce quotas, deliver.
    func drain() {
        guard running, let inotify else { return }
        var reachedEnd = false
        decoded.removeAll(keepingCapacity: true)
        for _ in 0..<Self.maxReadsPerBatch {
            let n: Int
            do throws(Errno) { n = try inotify.read(into: readBuffer) } catch {
                emitError("reading inotify events failed: \(error)", kind: "inotify")
                reachedEnd = true
                break
            }
            if n == 0 { reachedEnd = true; break }
            InotifyEvent.decode(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]), into: &decoded)
        }
        let debug = logger.logLevel <= .debug
        for event in decoded {
            if debug { logger.debug("inotify wd=\(event.wd) \(event.maskDescription) cookie=\(event.cookie) \(Engine.display(event.name))") }
            route(event)
        }
        // A rename split across reads pairs up in the next batch; once the queue is empty, an unpaired
        // `IN_MOVED_FROM` means the entry left the watched trees.
        if reachedEnd { finishPendingMoves() }
        retryUnreadDirectories()
        statDirtyFiles()
        if overflowSeen { recoverFromOverflow() }
        enforcePolicies()
        deliver()
        if !decoded.isEmpty, let source, !sourcePaused {
            source.suspend()
            sourcePaused = true
            queue.asyncAfter(deadline: .now() + Self.coalescingDelay) { @Sendable [weak self] in
                guard let self, self.sourcePaused else { return }
                self.sourcePaused = false
                self.source?.resume()
            }
        }
    }

    func route(_ e: InotifyEvent) {
        if e.has(CINOTIFY_IN_Q_OVERFLOW) { overflowSeen = true; return }
        guard let node = wdToNode[e.wd] else { return }
        if e.has(CINOTIFY_IN_IGNORED) {
            wdToNode[e.wd] = nil
            if ledger.node(node).live, ledger.node(node).wd == e.wd {
                ledger.setWatch(node, wd: -1)
                if ledger.node(node).parent < 0 { rootLost(ledger.node(node).root, why: "its watch was removed") }
            }
            return
        }
        let dirNode = ledger.node(node)
        guard dirNode.live else { return }
        let root = dirNode.root
        if e.name.isEmpty {
            if dirNode.parent < 0, e.has(CINOTIFY_IN_DELETE_SELF) || e.has(CINOTIFY_IN_MOVE_SELF) {
                rootLost(root, why: e.has(CINOTIFY_IN_DELETE_SELF) ? "it was deleted" : "it was moved away")
            }
            return
        }
        if let rt = roots[root], !rt.exclude.isEmpty, rt.exclude.matches(SizeLedger.join(ledger.relativePath(of: node), e.name)) {
            return
        }
        if e.isDirectory { routeDirectory(e, node: node, root: root) } else { routeFile(e, node: node, root: root) }
    }

    private func routeDirectory(_ e: InotifyEvent, node: Int32, root: Int32) {
        let existing = ledger.node(node).subdirs[e.name]
        if e.has(CINOTIFY_IN_CREATE) {
            directoryAppeared(parent: node, name: e.name, root: root)
        } else if e.has(CINOTIFY_IN_DELETE) {
            if let existing { removeDirectory(existing) }
        } else if e.has(CINOTIFY_IN_MOVED_FROM) {
            if let existing {
                ledger.detachDirectory(existing)
                pendingMoves[e.cookie] = .directory(node: existing, root: root)
            }
        } else if e.has(CINOTIFY_IN_MOVED_TO) {
            if case .directory(let moved, let fromRoot)? = pendingMoves.removeValue(forKey: e.cookie) {
                if fromRoot == root && ledger.node(moved).live {
                    var dropped: [Int32] = []
                    ledger.attachDirectory(moved, parent: node, name: e.name, droppedWatches: &dropped)
                    dropWatches(dropped, remove: true)
                    touchedRoots.insert(root)
                    return
                }
                // Between two roots: the bytes leave one total and the subtree is read into the other.
                touchedRoots.insert(fromRoot)
                removeDirectory(moved)
            }
            directoryAppeared(parent: node, name: e.name, root: root)
        }
    }

    private func routeFile(_ e: InotifyEvent, node: Int32, root: Int32) {
        if e.has(CINOTIFY_IN_CREATE) {
            markDirty(ledger.record(dir: node, name: e.name).record, [])
        } else if e.has(CINOTIFY_IN_MODIFY) {
            markDirty(ledger.record(dir: node, name: e.name).record, .modified)
        } else if e.has(CINOTIFY_IN_CLOSE_WRITE) {
            markDirty(ledger.record(dir: node, name: e.name).record, .closed)
        } else if e.has(CINOTIFY_IN_ATTRIB) {
            if let r = ledger.existingRecord(dir: node, name: e.name) { markDirty(r, []) }
        } else if e.has(CINOTIFY_IN_DELETE) {
            if let r = ledger.existingRecord(dir: node, name: e.name) {
                ledger.removeRecord(r)
                touchedRoots.insert(root)
            }
        } else if e.has(CINOTIFY_IN_MOVED_FROM) {
            if let r = ledger.existingRecord(dir: node, name: e.name) {
                ledger.detachRecord(r)
                pendingMoves[e.cookie] = .file(record: r)
            }
        } else if e.has(CINOTIFY_IN_MOVED_TO) {
            if case .file(let r)? = pendingMoves.removeValue(forKey: e.cookie) {
                let fromRoot = ledger.root(ofRecord: r)
                if fromRoot == root && ledger.fileRecord(r).live {
                    ledger.attachRecord(r, dir: node, name: e.name)
                    markDirty(r, .movedIn)
                    return
                }
                ledger.removeRecord(r)
                touchedRoots.insert(fromRoot)
            }
            if let old = ledger.existingRecord(dir: node, name: e.name) { ledger.removeRecord(old) }
            markDirty(ledger.record(dir: node, name: e.name).record, .movedIn)
        } else if e.has(CINOTIFY_IN_OPEN) {
            if let r = ledger.existingRecord(dir: node, name: e.name) {
                ledger.markOpened(r, time: Engine.nowNanoseconds())
            }
        }
    }

    func markDirty(_ r: Int32, _ flags: DirtyFlags) {
        if let old = dirty[r] {
            dirty[r] = old.union(flags)
        } else {
            dirty[r] = flags
            dirtyOrder.append(r)
        }
    }

    /// A directory was created or moved in: read it now (its files may already be there). It is looked at
    /// through its parent's verified descriptor, so a path swapped for a symlink is never followed.
    func directoryAppeared(parent: Int32, name: [UInt8], root: Int32) {
        guard let rt = roots[root], let account = ledger.accounts[root], ledger.node(parent).live else { return }
        var directories = VerifiedDirectories(ledger: ledger, root: root, rootPath: rt.pathBytes)
        defer { directories.close() }
        guard let parentFD = try? directories.open(parent) else {
            // The parent moved on disk beyond the records read so far: look again after the next batch.
            appearedRetry.append((parent, name, root))
            return
        }
        // Opened once, relative to the verified parent and never through a symlink; the walk takes it over.
        guard let fd = try? name.withCString({ n throws(Errno) in try Syscall.openDirectory(at: parentFD, n) }) else { return }
        guard let st = try? Syscall.fstat(fd), !rt.settings.oneFileSystem || UInt64(st.st_dev) == account.dev else {
            Syscall.close(fd)
            return
        }
        var dropped: [Int32] = []
        let (node, isNew) = ledger.addDirectory(parent: parent, name: name, ino: UInt64(st.st_ino), droppedWatches: &dropped)
        dropWatches(dropped, remove: true)
        guard isNew || ledger.node(node).wd < 0 else { Syscall.close(fd); return }
        touchedRoots.insert(root)
        try? scan(node, path: SizeLedger.join(ledger.path(of: parent), name), root: root, discovered: true,
                  strict: false, openedTop: fd)
    }

    /// Directories that could not be opened when they appeared (their path changed under a rename whose records
    /// were still queued) are read once the ledger has caught up: unread, a subtree would be missing for good.
    func retryUnreadDirectories() {
        if !appearedRetry.isEmpty {
            let pending = appearedRetry
            appearedRetry.removeAll()
            for (parent, name, root) in pending where ledger.node(parent).live && ledger.node(parent).root == root {
                directoryAppeared(parent: parent, name: name, root: root)
            }
        }
        if !unreadNodes.isEmpty {
            let pending = unreadNodes
            unreadNodes.removeAll()
            for n in pending {
                let node = ledger.node(n)
                guard node.live, node.wd < 0, roots[node.root] != nil, !blindNodes.contains(n) else { continue }
                touchedRoots.insert(node.root)
                try? scan(n, path: ledger.path(of: n), root: node.root, discovered: true, strict: false)
            }
        }
    }

    func removeDirectory(_ node: Int32) {
        touchedRoots.insert(ledger.node(node).root)
        var dropped: [Int32] = []
        ledger.removeSubtree(node, droppedWatches: &dropped)
        dropWatches(dropped, remove: true)
    }

    /// Renames whose partner never came: the entry moved out of every watched tree.
    func finishPendingMoves() {
        for move in pendingMoves.values {
            switch move {
            case .file(let r):
                if ledger.fileRecord(r).live {
                    touchedRoots.insert(ledger.root(ofRecord: r))
                    ledger.removeRecord(r)
                }
            case .directory(let n, _):
                if ledger.node(n).live { removeDirectory(n) }
            }
        }
        pendingMoves.removeAll()
    }

    /// One `fstatat` per file the batch touched, relative to its verified directory; emits `write` for files
    /// closed after writing or moved in. A file whose directory cannot be opened as the ledger knows it (renamed,
    /// swapped, events still queued) is retried with the next batch instead of being guessed at.
    func statDirtyFiles() {
        for r in ledger.needsStat where ledger.fileRecord(r).live { markDirty(r, []) }
        ledger.needsStat.removeAll()
        var directories: [Int32: VerifiedDirectories] = [:]
        var retry: [(Int32, DirtyFlags)] = []
        for r in dirtyOrder {
            let flags = dirty[r]!
            let rec = ledger.fileRecord(r)
            guard rec.live, rec.attached else { continue }
            let root = rec.root
            guard let rt = roots[root], ledger.accounts[root] != nil else { continue }
            touchedRoots.insert(root)
            if directories[root] == nil { directories[root] = VerifiedDirectories(ledger: ledger, root: root, rootPath: rt.pathBytes) }
            let dirfd: Int32
            do throws(Errno) { dirfd = try directories[root]!.open(rec.dir) } catch {
                retry.append((r, flags))
                continue
            }
            let st: stat
            do throws(Errno) { st = try rec.name.withCString { p throws(Errno) in try Syscall.lstat(at: dirfd, p) } } catch {
                if error == .noSuchFileOrDirectory {
                    ledger.removeRecord(r)
                } else {
                    emitError("cannot stat: \(error)", dir: rt.settings.name, file: Engine.display(ledger.relativePath(ofRecord: r)), kind: "stat")
                }
                continue
            }
            guard st.isRegularFile else { ledger.removeRecord(r); continue }
            let status = rec.name.withCString { fileStatus(st, root: root, dirfd: dirfd, name: $0) }
            ledger.apply(status, to: r, keepOpenedAge: rt.settings.order == .opened)
            if flags.contains(.closed) { ledger.setWriting(r, false) } else if flags.contains(.modified) { ledger.setWriting(r, true) }
            if flags.contains(.closed) || flags.contains(.movedIn) { emitWrite(r, root: root) }
        }
        for key in directories.keys { directories[key]!.close() }
        dirty.removeAll(keepingCapacity: true)
        dirtyOrder.removeAll(keepingCapacity: true)
        for (r, flags) in retry { markDirty(r, flags) }
    }
}
