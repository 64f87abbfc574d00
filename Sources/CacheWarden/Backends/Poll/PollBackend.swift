import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch
import Logging
import SystemPackage

/// The polling backend, for filesystems whose changes the kernel of this machine does not see (NFS, CIFS, FUSE:
/// another host or the FUSE daemon changes the files). It holds no kernel watch: "watching" a directory records a
/// `PollSnapshot` of it (inode, mtime, ctime, path) before the walker reads it. Every `poll_interval` a pass over
/// each root `lstat`s every directory and hands the engine a `rescan` for each whose times moved (and, for a
/// directory deleted or replaced, `directoryGone`), so the ledger updater's own re-read does the diff: files
/// gone are removed, new ones counted and announced, changed ones statted. The re-read takes a new snapshot.
///
/// A directory's times move when entries are added, removed or renamed, not when a file in it is written in
/// place; hence two more rules. A directory that had changed within an interval of its read is read again on
/// the next pass (`PollSnapshot.unsettled`): a file being written when the pass read it gets its final size
/// then. And every `fullPassEvery`-th pass re-reads every directory.
///
/// Confined to the engine's queue (its timers fire there), except `directoryWatcher`, which the walkers call from
/// their threads.
/// `@unchecked Sendable` by that confinement: the engine's queue (`queue`), checked with `assertOnQueue` at the
/// entry points (debug builds).
final class PollBackend: ChangeBackend, @unchecked Sendable {
    /// Every 10th pass re-reads every directory, changed or not. What a timestamp cannot show: a file rewritten
    /// in place in a quiet directory, a FUSE filesystem that reports constant directory times (s3fs, rclone and
    /// the like), an NFS server whose clock is skewed beyond `timestampSlack`. NFS attribute caching itself only
    /// delays a change (by `acdirmax`, 60 s by default) — a later pass sees the times move. At the default 30 s
    /// that is a full re-read every 5 minutes, a tenth of a full scan per pass on average: the bound on how stale
    /// a hidden change can get, for at most 10 % more I/O than polling changed directories alone.
    static let fullPassEvery = 10
    /// Timestamps are trusted to 2 s: the coarsest common granularity (FAT and SMB: 2 s; ext3 and many NFS
    /// servers: 1 s) and small clock skews. A directory changed this close to its read is read again.
    static let timestampSlack: Int64 = 2_000_000_000

    private let queue: DispatchQueue
    private let clock: any WardenClock
    private let pending = PollPending()
    private var roots: [RootID: PolledRoot] = [:]
    private var rootOf: [NodeID: RootID] = [:]
    private var deliver: ((inout ChangeBatch) -> BackendPace)?
    private var suspensions = 0
    /// Roots whose pass fell while delivery was held: run when it resumes.
    private var missed = Set<RootID>()

    init(queue: DispatchQueue, clock: any WardenClock) {
        self.queue = queue
        self.clock = clock
    }

    deinit { release() }

    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        let (pending, clock) = (self.pending, self.clock)
        return DirectoryWatcher { fd, st, _ in
            do throws(Errno) {
                return .watched(
                    pending.add(
                        try PollSnapshot(directory: fd, status: st, route: route, now: clock.fileTimeNanoseconds)))
            } catch {
                return .failed(error)
            }
        }
    }

    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption {
        assertOnQueue(queue)
        guard let handle = attempt.handle, let snapshot = pending.take(handle) else { return .none }
        let root = snapshot.route.root
        if let old = rootOf[node], old != root { roots[old]?.nodes[node] = nil }
        rootOf[node] = root
        roots[root, default: PolledRoot(interval: snapshot.route.pollInterval)].nodes[node] = snapshot
        if deliver != nil { schedule(root) }
        return .watched(displaced: nil)
    }

    func unwatch(_ node: NodeID) {
        assertOnQueue(queue)
        guard let root = rootOf.removeValue(forKey: node) else { return }
        roots[root]?.nodes[node] = nil
        guard roots[root]?.nodes.isEmpty == true else { return }
        roots[root]?.timer?.cancel()
        roots[root] = nil
    }

    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) {
        assertOnQueue(queue)
        self.deliver = deliver
        for root in roots.keys { schedule(root) }
    }

    func suspend() {
        assertOnQueue(queue)
        suspensions += 1
    }

    func resume() {
        assertOnQueue(queue)
        guard suspensions > 0 else { return }
        suspensions -= 1
        guard suspensions == 0, !missed.isEmpty else { return }
        let due = missed
        missed.removeAll()
        queue.async { @Sendable [weak self] in for root in due { self?.pass(root) } }
    }

    func stop() {
        assertOnQueue(queue)
        release()
    }

    /// What `stop` does, without the queue check: `deinit` runs on whichever thread drops the last reference, and
    /// nothing else can reach the backend then.
    private func release() {
        for root in roots.values { root.timer?.cancel() }
        roots.removeAll()
        rootOf.removeAll()
        pending.removeAll()
        missed.removeAll()
        suspensions = 0
        deliver = nil
    }

    var watchCount: Int { rootOf.count }
    func availability(of kind: BackendKind, at path: String?) -> String? {
        kind == .poll ? nil : "the polling backend polls only"
    }
    func pollCost(_ root: RootID) -> PollPassCost? { roots[root]?.cost }
    /// Whether `root` has polled directories (for tests).
    func polls(_ root: RootID) -> Bool { roots[root] != nil }

    /// Starts `root`'s timer if it has none.
    private func schedule(_ root: RootID) {
        guard let polled = roots[root], polled.timer == nil else { return }
        let interval = Nanoseconds.span(seconds: max(1, polled.interval))
        roots[root]?.timer = clock.schedule(
            at: Nanoseconds.after(clock.uptimeNanoseconds, interval), repeating: interval, on: queue
        ) {
            @Sendable [weak self] in self?.pass(root)
        }
    }

    /// One pass over `root`: its directories checked, those due handed to the engine as one batch.
    func pass(_ root: RootID) {
        assertOnQueue(queue)
        guard let deliver, roots[root] != nil else { return }
        guard suspensions == 0 else { missed.insert(root); return }
        pending.removeAll() // every walk ran to its end in an earlier call on this queue
        let started = DispatchTime.now().uptimeNanoseconds
        roots[root]?.passes += 1
        guard let polled = roots[root] else { return }
        let (reread, gone) = polled.due(full: polled.passes % Self.fullPassEvery == 0)
        var batch = ChangeBatch()
        for node in gone { batch.append(.directoryGone, node: node) }
        for node in reread { batch.append(.rescan, node: node) }
        if !batch.isEmpty { _ = deliver(&batch) }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        roots[root]?.cost = PollPassCost(
            seconds: seconds, directoriesRead: reread.count, directoriesChecked: polled.nodes.count)
    }
}

extension BackendFactory {
    /// The polling backend alone, for every root whatever its route says (tests, benchmarks).
    static func poll() -> BackendFactory {
        BackendFactory { queue, _, clock throws(WardenError) in PollBackend(queue: queue, clock: clock) }
    }
}
