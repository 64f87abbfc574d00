import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// The updater's system calls: one `fstatat` per file a batch touched, and reads of directories that appeared.
extension LedgerUpdater {
    /// A directory was created or moved in: read it now (its files may already be there). It is looked at
    /// through its parent's verified descriptor, so a path swapped for a symlink is never followed.
    mutating func directoryAppeared(parent: NodeID, name: [UInt8], root: RootID, _ state: inout PipelineState) {
        guard let rt = state.roots[root], let account = state.ledger.account(root), state.ledger.isLive(parent) else {
            return
        }
        var directories = VerifiedDirectories(root: root, in: state.ledger, crossingMounts: !rt.settings.oneFileSystem)
        defer { directories.close() }
        let parentFD: FileDescriptor
        do throws(Errno) { parentFD = try directories.open(parent, in: state.ledger) } catch {
            // The parent moved on disk beyond the changes applied so far: look again after the next batch — unless
            // a mount now covers it (never crossed).
            if error != .improperLink { appearing[DirectoryName(parent: parent, name: name)] = root }
            return
        }
        // Opened once, relative to the verified parent, never through a symlink nor (with `one_file_system`) into
        // another mount; the scan takes it over.
        let oneFileSystem = rt.settings.oneFileSystem
        guard
            let folder = try? name.withCString({ n throws(Errno) in
                try TreeWalker.openSubdirectory(at: parentFD, n, oneFileSystem: oneFileSystem)
            })
        else { return }
        guard let st = try? Syscall.fstat(folder.fd), !rt.settings.oneFileSystem || UInt64(st.st_dev) == account.dev
        else {
            return
        }
        let (node, isNew, stale) = name.withUnsafeBytes {
            state.ledger.addDirectory(parent: parent, name: $0, ino: UInt64(st.st_ino), bytes: rt.fileStat.bytes(st))
        }
        statAgain(stale)
        guard isNew || !state.ledger.isWatched(node) else { return }
        delta.touched.insert(root)
        noteDiscovered(scanner.scan(node, root: root, discovered: true, openedTop: folder, &state))
    }

    /// Keeps what a discovering scan read and announced.
    private mutating func noteDiscovered(_ outcome: TreeScanner.Outcome) {
        unread.formUnion(outcome.unread)
        statAgain(outcome.stale)
        for (r, status) in outcome.announced { announced[r] = status }
    }

    /// Directories that appeared in the batch are read now, once each (`appearing`); those that could not be
    /// opened (their path changed under a rename whose changes were still queued) are read after the next batch,
    /// once the ledger has caught up: unread, a subtree would be missing for good.
    mutating func retryUnread(_ state: inout PipelineState) {
        if !appearing.isEmpty {
            let pending = appearing
            appearing.removeAll()
            for (key, root) in pending
            where state.ledger.isLive(key.parent) && state.ledger.root(of: key.parent) == root {
                directoryAppeared(parent: key.parent, name: key.name, root: root, &state)
            }
        }
        if !unread.isEmpty {
            let pending = unread
            unread.removeAll()
            for n in pending where state.ledger.isLive(n) && !state.ledger.isWatched(n) {
                let root = state.ledger.root(of: n)
                guard state.roots[root] != nil else { continue }
                delta.touched.insert(root)
                noteDiscovered(scanner.scan(n, root: root, discovered: true, &state))
            }
        }
    }

    /// Re-reads one directory (`Change.Kind.rescan`: a polling pass saw it change): vanished or replaced
    /// subdirectories are dropped, files no longer there are removed, the others statted again, new ones counted
    /// and announced (`write`), new subdirectories read whole; subdirectories still there are not descended (they
    /// are re-read when they change themselves). The watch is tried again (inotify's, once one is free).
    /// A directory that cannot be read keeps what it had.
    mutating func rescan(_ n: NodeID, _ state: inout PipelineState) {
        guard state.ledger.isLive(n) else { return } // removed: the engine unwatched it when it settled
        let root = state.ledger.root(of: n)
        guard state.roots[root] != nil else { return }
        var before: [RecordID] = []
        state.ledger.node(n).files.forEach { before.append(RecordID($0)) }
        // Not readable now: it keeps what it had (a scan of it would find nothing to diff against).
        guard let known = dropVanishedSubdirectories(of: n, root: root, &state) else { return }
        delta.touched.insert(root)
        let outcome = scanner.scan(n, root: root, discovered: true, rereading: known, &state)
        noteDiscovered(outcome)
        guard let found = outcome.topFiles else { return }
        for r in before where state.ledger.isLive(r) && !found.contains(r) {
            noteUnseen(r, state.ledger)
            statAgain(state.ledger.removeRecord(r))
        }
        restatOtherNames(of: found, excluding: Set(before), &state)
    }

    /// A file with one link found under a new name here while another name of that inode is still counted (moved
    /// from a directory not re-read yet): that other name is stale. It is statted in this same batch, before any
    /// policy sees the total, instead of the file being counted twice until its directory's turn comes.
    private mutating func restatOtherNames(
        of found: Set<RecordID>, excluding before: Set<RecordID>, _ state: inout PipelineState
    ) {
        for r in found where !before.contains(r) && state.ledger.isLive(r) {
            if let stale = state.ledger.staleName(besides: r) { staleNames.append(stale) }
        }
    }

    /// Drops the subdirectories of `n` that are gone or were replaced on disk; returns the others (name → inode)
    /// that are followed (one whose read failed is not: the scan reads it again); nil when `n` cannot be opened.
    private mutating func dropVanishedSubdirectories(of n: NodeID, root: RootID, _ state: inout PipelineState)
        -> [[UInt8]: UInt64]?
    {
        var subdirs: [NodeID] = []
        state.ledger.node(n).subdirs.forEach { subdirs.append(NodeID($0)) }
        var known: [[UInt8]: UInt64] = [:]
        var directories = VerifiedDirectories(
            root: root, in: state.ledger, crossingMounts: state.roots[root]?.settings.oneFileSystem == false)
        defer { directories.close() }
        guard let fd = try? directories.open(n, in: state.ledger) else { return nil }
        for child in subdirs {
            let name = state.ledger.name(of: child)
            let st = try? name.withCString { p throws(Errno) in try Syscall.lstat(at: fd, p) }
            let ino = state.ledger.node(child).ino
            if st?.isDirectory != true || st.map({ UInt64($0.st_ino) }) != ino {
                removeDirectory(child, &state)
            } else if state.ledger.isWatched(child) {
                known[name] = ino
            }
        }
        return known
    }

    /// One `fstatat` per file the batch touched, relative to its verified directory; emits `write` for files
    /// closed after writing, moved in, or linked in. A file whose directory cannot be opened as the ledger knows
    /// it (renamed, swapped, changes still queued) is retried with the next batch instead of being guessed at.
    ///
    /// Names a stat of this batch finds stale (another name of a hard-linked file in another root, whose folder
    /// hears nothing of a write through this one) are statted in the same batch: left for the next, they would
    /// wait for a change that may never come. Two passes more at most; their stats agree with the first.
    mutating func statDirtyFiles(_ state: inout PipelineState) {
        var retry: [(RecordID, DirtyFlags)] = []
        for _ in 0..<3 {
            for r in staleNames where state.ledger.isLive(r) { markDirty(r, []) }
            staleNames.removeAll(keepingCapacity: true)
            guard !dirty.isEmpty else { break }
            statPass(&state, retry: &retry)
        }
        for (r, flags) in retry { markDirty(r, flags) }
    }

    private mutating func statPass(_ state: inout PipelineState, retry: inout [(RecordID, DirtyFlags)]) {
        var directories: [RootID: VerifiedDirectories] = [:]
        for (r, flags) in dirty {
            guard state.ledger.isLive(r) else { continue }
            let rec = state.ledger.record(r)
            guard rec.attached, state.roots[rec.root] != nil else { continue }
            delta.touched.insert(rec.root)
            if directories[rec.root] == nil {
                let crossing = state.roots[rec.root]?.settings.oneFileSystem == false
                directories[rec.root] = VerifiedDirectories(root: rec.root, in: state.ledger, crossingMounts: crossing)
            }
            let dirfd: FileDescriptor
            do throws(Errno) { dirfd = try directories[rec.root]!.open(rec.dir, in: state.ledger) } catch {
                // Behind a mount placed over a directory on the way (never crossed): hidden, as from a fresh
                // scan. Otherwise the ledger is behind a rename: stat it after the next batch.
                if error == .improperLink { statAgain(state.ledger.removeRecord(r)) } else { retry.append((r, flags)) }
                continue
            }
            stat(r, flags, in: dirfd, &state)
        }
        for key in directories.keys { directories[key]?.close() }
        dirty.removeAll(keepingCapacity: true)
    }

    /// One `fstat` per directory whose entries changed, for roots that count directories' own blocks.
    mutating func statDirtyDirectories(_ state: inout PipelineState) {
        guard !dirtyDirectories.isEmpty else { return }
        var directories: [RootID: VerifiedDirectories] = [:]
        for n in dirtyDirectories where state.ledger.isLive(n) {
            let root = state.ledger.root(of: n)
            guard let rt = state.roots[root] else { continue }
            if directories[root] == nil {
                directories[root] = VerifiedDirectories(
                    root: root, in: state.ledger, crossingMounts: !rt.settings.oneFileSystem)
            }
            guard let fd = try? directories[root]?.open(n, in: state.ledger), let st = try? Syscall.fstat(fd) else {
                continue
            }
            state.ledger.setDirectoryBytes(n, rt.fileStat.bytes(st))
            delta.touched.insert(root)
        }
        for key in directories.keys { directories[key]?.close() }
        dirtyDirectories.removeAll(keepingCapacity: true)
    }

    private mutating func stat(
        _ r: RecordID, _ flags: DirtyFlags, in dirfd: FileDescriptor, _ state: inout PipelineState
    ) {
        let rec = state.ledger.record(r)
        guard let rt = state.roots[rec.root] else { return }
        let name = state.ledger.name(ofRecord: r)
        let st: stat
        do throws(Errno) { st = try name.withCString { p throws(Errno) in try Syscall.lstat(at: dirfd, p) } } catch {
            if error == .noSuchFileOrDirectory {
                if !rec.statted && !flags.contains(.closed) && flags != .recheck { delta.suspects.insert(rec.root) }
                statAgain(state.ledger.removeRecord(r))
            } else {
                state.events.error(
                    "cannot stat: \(error)", dir: rt.name,
                    file: PathBytes.display(state.ledger.relativePath(ofRecord: r)), kind: "stat")
            }
            return
        }
        guard st.isRegularFile else { statAgain(state.ledger.removeRecord(r)); return }
        var noBirthTime = false
        let status = FileStatus(
            name.withCString { rt.fileStat.status(st, dirfd: dirfd, name: $0, noBirthTime: &noBirthTime) })
        if noBirthTime { scanner.reportNoBirthTime(rec.root, &state) }
        statAgain(state.ledger.apply(status, to: r, keepOpenedAge: rt.settings.order == .opened))
        if flags.contains(.closed) {
            state.ledger.setWriting(r, false)
        } else if flags.contains(.modified) {
            state.ledger.setWriting(r, true)
        }
        let linkedIn = flags.contains(.created) && status.links > 1
        // A file a scan found (and announced) in a directory that had just appeared, whose close came through the
        // new watch: the same write, already said, unless it was written again since — whatever other events came
        // with the close (fanotify's mark reports a file's creation and writes from before the scan, merged into
        // one event; inotify those that fell between the new watch and the listing). Where a write moves the age,
        // that is when nothing the scan saw changed; where it does not (atime, btime), a close alone with the
        // size said.
        var alreadyAnnounced = false
        if flags.contains(.closed), !announced.isEmpty || !announcedBefore.isEmpty {
            let newer = announced.removeValue(forKey: r), older = announcedBefore.removeValue(forKey: r)
            if let said = newer ?? older {
                alreadyAnnounced =
                    rt.settings.order.movesOnWrite ? said == status : flags == .closed && said.bytes == status.bytes
            }
        }
        // A file a recheck found where nothing was counted is a new file, whose own close merged away.
        let foundByRecheck = flags == .recheck && !rec.statted
        if (flags.contains(.closed) && !alreadyAnnounced) || flags.contains(.movedIn) || linkedIn || foundByRecheck {
            state.emitWrite(r, root: rec.root)
        }
    }
}
