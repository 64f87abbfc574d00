import CacheWardenLedger
import CacheWardenFilesystem
import FoundationEssentials
import Glibc
import SystemPackage

/// Reads trees into the ledger: the one place directories are read. The initial scan of a root walks on threads
/// of its own while the watcher's queue files what they find; run-time scans (a directory created or moved in, a
/// re-read) walk inline. Each directory is watched by the backend *before* its entries are read, so a file
/// created between the two is either found by the read or reported by an event (the ledger is idempotent per
/// name). Without a `WatchPort` (a one-shot report) nothing is watched.
package struct TreeScanner {
    let watching: WatchPort?
    /// Walker threads of the initial scan: one per core, at least 2 (one walks while the other waits on the disk).
    /// (`package`: the benchmark's floor walk uses as many.)
    package static let walkerThreads = max(2, ProcessEnvironment.processorCount)

    /// What a scan hands on: the watches it obtained, and what it could not read yet (renamed or swapped under it;
    /// read again once events caught up).
    struct Outcome {
        var unread: [NodeID] = []
        /// Files whose `write` line a discovering scan emitted, with the status it saw (see
        /// `LedgerUpdater.announced`).
        var announced: [(RecordID, FileStatus)] = []
        /// Why a root's scan failed (the root itself, or the watch limit at registration).
        var failure: WardenError?
        /// A re-read of one directory (`scan(rereading:)`): only new files are announced.
        var rereading = false
        /// In a re-read, the top's files found on disk (nil: the top could not be read).
        var topFiles: Set<RecordID>?
        /// Names the ledger said to stat again while the scan filed what it found (see `SizeLedger.removeRecord`).
        var stale: [RecordID] = []
    }

    /// (Re)builds root `id` from disk, keeping its files in oldest-first order when `ordered`. `folder` is the
    /// root, opened and checked by the caller (`Engine.openRoot`); the scan takes it over. Fails for problems with
    /// the root itself and for the watch limit (`Outcome.failure`).
    func scanRoot(_ id: RootID, ordered: Bool, folder: OwnedDescriptor, _ state: inout PipelineState) -> Outcome {
        guard let rt = state.roots[id] else { return Outcome() }
        let st: stat
        let fd: OwnedDescriptor
        do throws(Errno) {
            st = try Syscall.fstat(folder.fd)
            fd = try Syscall.reopenForListing(folder.fd)
        } catch {
            return Outcome(failure: .path(error, rt.path))
        }
        let ordered = ordered || state.ledger.account(id)?.ordered == true
        let stale = state.ledger.removeRoot(id)
        let node = state.ledger.addRoot(
            id, path: rt.pathBytes, ino: UInt64(st.st_ino), dev: UInt64(st.st_dev),
            bytes: rt.fileStat.bytes(st), countsDirectories: rt.settings.countDirectories,
            ordered: ordered)
        state.ledger.beginBulkLoad(id)
        defer { state.ledger.endBulkLoad(id) }
        var outcome = walkInParallel(root: id, top: node, fd: fd, &state)
        outcome.stale.appendIfAny(stale)
        if outcome.failure == nil { state.roots[id]?.lost = nil }
        return outcome
    }

    /// Reads the tree under directory `top` of `root` inline. `discovered` marks files found at run time (they
    /// get `write` lines). `openedTop` is a descriptor of `top` the caller already opened safely (the scan owns
    /// it); without it, `top` is opened through `VerifiedDirectories`. `rereading` reads `top` again: the
    /// subdirectories it names (name → inode, already in the ledger) are not descended, and the top's files found
    /// are returned (`Outcome.topFiles`).
    func scan(
        _ top: NodeID, root: RootID, discovered: Bool, openedTop: OwnedDescriptor? = nil,
        rereading known: [[UInt8]: UInt64]? = nil,
        _ state: inout PipelineState
    ) -> Outcome {
        var outcome = Outcome()
        outcome.rereading = known != nil
        guard let rt = state.roots[root], state.ledger.account(root) != nil, state.ledger.isLive(top) else {
            return outcome
        }
        let fd: OwnedDescriptor
        if let openedTop {
            fd = openedTop
        } else {
            var directories = VerifiedDirectories(
                root: root, in: state.ledger, crossingMounts: !rt.settings.oneFileSystem)
            defer { directories.close() }
            do throws(Errno) { fd = try Syscall.reopenForListing(try directories.open(top, in: state.ledger)) } catch {
                reportUnreadable(top, root: root, error: error, &state, &outcome)
                return outcome
            }
        }
        var walker = self.walker(for: rt, state.ledger)
        walker.knownSubdirectories = known ?? [:]
        if state.ledger.isRoot(top) { walker.skipped = TrashFolder.isTrashName }
        let start = TreeWalker.top(
            fd, ino: state.ledger.node(top).ino, relative: state.ledger.relativePath(of: top))
        var nodes = WalkNodes(top: top)
        walker.walk(start, watch: watchHook(for: rt), cancelled: { false }) { walked in
            try? file(walked, root: root, nodes: &nodes, discovered: discovered, strict: false, &state, &outcome)
        }
        return outcome
    }

    private func walker(for rt: RootRuntime, _ ledger: SizeLedger) -> TreeWalker {
        TreeWalker(
            dev: ledger.account(rt.id)?.dev ?? 0, oneFileSystem: rt.settings.oneFileSystem,
            exclude: Self.excluding(rt.exclude), fileStat: rt.fileStat)
    }

    /// The walk's `watch`: the backend's watcher for the root's events and route (none without a `WatchPort`).
    private func watchHook(for rt: RootRuntime) -> WatchHook<WatchAttempt>? {
        guard let watcher = watching?.watcher(rt.watchEvents, rt.route) else { return nil }
        let events = rt.watchEvents
        return { fd, st in watcher.watch(fd, st, events) }
    }

    /// The walk's `exclude`: an entry's path relative to the root, unless one of the root's `exclude` globs
    /// matches it (none without globs: relative paths are then not kept).
    static func excluding(_ globs: GlobMatcher) -> ExcludeHook? {
        guard !globs.isEmpty else { return nil }
        return { directory, name in
            let path = PathBytes.join(directory, name)
            return globs.matches(path) ? nil : path
        }
    }

    /// The initial scan: walkers on threads of their own, this queue filing what they report.
    private func walkInParallel(root: RootID, top: NodeID, fd: OwnedDescriptor, _ state: inout PipelineState)
        -> Outcome
    {
        guard let rt = state.roots[root] else { return Outcome() }
        var configured = self.walker(for: rt, state.ledger)
        configured.skipped = TrashFolder.isTrashName
        let walker = configured
        let watch = watchHook(for: rt)
        let start = TreeWalker.top(fd, ino: state.ledger.node(top).ino, relative: [])
        let channel = WalkChannel()
        let thread = Thread {
            walker.walkInParallel(
                start,
                threads: Self.walkerThreads,
                watch: watch,
                cancelled: { channel.cancelled.load(ordering: .relaxed) }
            ) { channel.put($0) }
            channel.finish()
        }
        thread.name = "cachewarden.scan"
        thread.start()
        var nodes = WalkNodes(top: top)
        var outcome = Outcome()
        while case let walked = channel.take(), !walked.isEmpty {
            for d in walked where outcome.failure == nil { // after a failure, drain until the walkers have stopped
                do throws(WardenError) {
                    try file(d, root: root, nodes: &nodes, discovered: false, strict: true, &state, &outcome)
                } catch {
                    outcome.failure = error
                    channel.cancelled.store(true, ordering: .relaxed)
                }
            }
        }
        return outcome
    }
}
