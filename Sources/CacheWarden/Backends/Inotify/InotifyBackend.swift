import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch
import Glibc
import Logging
import SystemPackage

/// The inotify backend: one inotify instance, and a second one for opens and closes where a root tracks them
/// (`InotifyOpens`: why they are kept apart is said there), both held one-shot in a `ReadinessSet` set that a
/// `DispatchSourceRead` on the engine's queue watches (why one-shot is said there).
///
/// It owns everything about inotify: the watch descriptor ↔ node maps, rename pairing by cookie (a
/// `IN_MOVED_FROM` whose `IN_MOVED_TO` never came, once the queue is drained, is a move out of the trees),
/// `IN_IGNORED` (a dropped watch) and overflow. A directory it cannot watch because `fs.inotify.max_user_watches`
/// is reached is `limitReached`: `RoutingBackend` hands it to fanotify or polling. Confined to the engine's queue,
/// except `directoryWatcher`, which the walkers call from their threads.
/// `@unchecked Sendable` by that confinement: the engine's queue (`queue`), checked with `assertOnQueue` at the
/// entry points (debug builds).
final class InotifyBackend: ChangeBackend, @unchecked Sendable {
    /// Reads per batch: a batch ends when the queue is empty or after this many 64 KiB reads.
    static let maxReadsPerBatch = 16
    /// While records come fast, reading rests this long after a batch, so a busy writer's records arrive in
    /// batches of hundreds instead of a wake-up per handful (`ReadPacing`). A slow writer's or an idle watcher's
    /// schedules nothing.
    static let coalescingDelay: DispatchTimeInterval = .milliseconds(2)

    private let queue: DispatchQueue
    private let logger: Logger
    private let inotify: InotifyDescriptor
    private var readiness: ReadinessSet
    /// A seam for tests: decides the outcome of watching a directory (by its path) instead of the kernel.
    private let addWatchOverride: (@Sendable (String) -> Errno?)?
    private var source: DispatchSourceRead?
    private var deliver: ((inout ChangeBatch) -> BackendPace)?
    private var wdToNode: [Int32: NodeID] = [:]
    private var nodeToWd: [NodeID: Int32] = [:]
    /// `IN_MOVED_FROM` cookies still waiting for their `IN_MOVED_TO`.
    private var pendingCookies = Set<UInt32>()
    /// Suspensions and rests: the descriptors disarmed while held.
    private lazy var pacing = ReadPacing(
        queue: queue, delay: Self.coalescingDelay,
        hold: { [unowned self] in readiness.disarm() }, release: { [unowned self] in readiness.arm() })
    private var batch = ChangeBatch()
    private let readBuffer: UnsafeMutableRawBufferPointer
    /// Created the first time a root wants opens.
    private var opens: InotifyOpens?

    init(
        queue: DispatchQueue, logger: Logger,
        addWatchOverride: (@Sendable (String) -> Errno?)? = nil
    ) throws(WardenError) {
        self.queue = queue
        self.logger = logger
        self.addWatchOverride = addWatchOverride
        do throws(Errno) { inotify = try InotifyDescriptor() } catch {
            throw .inotifyUnavailable(
                error == .tooManyOpenFiles
                    ? "EMFILE: fs.inotify.max_user_instances = \(InotifyDescriptor.maxUserInstances) reached"
                    : "\(error)")
        }
        do throws(Errno) {
            readiness = try ReadinessSet()
            try readiness.add(inotify.fd)
        } catch {
            throw .inotifyUnavailable("epoll: \(error)")
        }
        // 64 KiB holds ~1,300 records; NAME_MAX + 1 + header is the minimum the kernel needs for one.
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    }

    deinit {
        release()
        readBuffer.deallocate()
    }

    /// The inotify descriptor (for tests that count the kernel's watches in `/proc/self/fdinfo`).
    var descriptor: FileDescriptor { inotify.fd }
    /// Whether `node` has a watch (for tests of watch bookkeeping).
    func hasWatch(_ node: NodeID) -> Bool { nodeToWd[node] != nil }
    var watchCount: Int { wdToNode.count }

    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        let inotify = self.inotify
        let override = addWatchOverride
        let opens = events.contains(.opens) ? opensInstance() : nil
        return DirectoryWatcher { fd, _, events in
            do throws(Errno) {
                if let override, let injected = override(Syscall.readLink(fd.procPath) ?? "") {
                    throw injected
                }
                let wd = try inotify.addWatch(directory: fd)
                return .watched(
                    WatchHandle(wd: wd, opens: events.contains(.opens) ? opens?.addWatch(directory: fd) : nil))
            } catch {
                // ENOSPC from inotify_add_watch is the per-user watch limit, never a full disk.
                return error == .noSpace ? .limitReached(limit: InotifyDescriptor.maxUserWatches) : .failed(error)
            }
        }
    }

    /// The opens instance, created (and, once delivery has started, read) the first time it is needed; nil when
    /// the kernel refuses another instance (opens are then not tracked; the totals are unaffected).
    private func opensInstance() -> InotifyOpens? {
        if let opens { return opens }
        let made: InotifyOpens
        do throws(Errno) {
            made = try InotifyOpens(logger: logger)
            do throws(Errno) { try readiness.add(made.inotify.fd) } catch { made.stop(); throw error }
        } catch {
            logger.error(
                "cannot track open files (a second inotify instance: \(error)); spare_open and order = opened see no opens"
            )
            return nil
        }
        if pacing.isSuspended { readiness.disarm() }
        opens = made
        return made
    }

    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption {
        assertOnQueue(queue)
        guard let handle = attempt.handle else { return .none }
        return .watched(displaced: bind(handle.wd, opens: handle.opensWd, to: node))
    }

    func availability(of kind: BackendKind, at path: String?) -> String? {
        kind == .inotify ? nil : "the inotify backend serves inotify only"
    }

    /// Maps watch `wd` (and its opens watch) to `node`; returns the node it mapped before, if another.
    private func bind(_ wd: Int32, opens opensWd: Int32?, to node: NodeID) -> NodeID? {
        var displaced: NodeID?
        if let other = wdToNode[wd], other != node {
            nodeToWd[other] = nil
            displaced = other
        }
        if let old = nodeToWd[node], old != wd { wdToNode[old] = nil }
        wdToNode[wd] = node
        nodeToWd[node] = wd
        if let opensWd { opens?.bind(opensWd, to: node) }
        return displaced
    }

    func unwatch(_ node: NodeID) {
        assertOnQueue(queue)
        opens?.unwatch(node)
        guard let wd = nodeToWd.removeValue(forKey: node) else { return }
        wdToNode[wd] = nil
        inotify.removeWatch(wd)
    }

    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) {
        assertOnQueue(queue)
        self.deliver = deliver
        pacing.read = { [unowned self] in self.drainAndDeliver(passes: 1) }
        let source = DispatchSource.makeReadSource(fileDescriptor: readiness.fd.rawValue, queue: queue)
        source.setEventHandler { @Sendable [unowned self] in self.readBatch() }
        // The cancel handler holds the descriptors until the source is done with them: closed earlier, a number
        // could be reused by another descriptor while the cancellation is still pending.
        let (inotify, readiness) = (self.inotify, self.readiness)
        source.setCancelHandler { withExtendedLifetime((inotify, readiness)) {} }
        source.resume()
        self.source = source
    }

    /// Holds delivery: the descriptors are disarmed, so records queue without waking anyone.
    func suspend() { pacing.suspend() } // checked by `ReadPacing` (the same queue)

    func resume() { pacing.resume() } // checked by `ReadPacing` (the same queue)

    func stop() {
        assertOnQueue(queue)
        release()
    }

    /// What `stop` does, without the queue check: `deinit` runs on whichever thread drops the last reference, and
    /// nothing else can reach the backend then.
    private func release() {
        if let opens {
            readiness.remove(opens.inotify.fd)
            opens.stop()
        }
        pacing.reset()
        source?.cancel()
        source = nil
        deliver = nil
        for wd in wdToNode.keys { inotify.removeWatch(wd) }
        wdToNode.removeAll()
        nodeToWd.removeAll()
        pendingCookies.removeAll()
    }

    // MARK: Reading

    /// The read source's handler. The descriptors stay in the set while it runs: the source itself is one-shot
    /// (libdispatch re-arms it once the handler returns, and records queued meanwhile make it fire again at once).
    private func readBatch() {
        assertOnQueue(queue)
        guard !pacing.isSuspended else { return } // resume() arms again
        drainAndDeliver(passes: ReadPacing.passesPerWakeUp)
    }

    /// Reads and delivers batches until a read finds the queue empty (`passes` at most): the records that came
    /// while a batch was processed (a file's close after its creation) are read in the same wake-up instead of
    /// waking the reader again. Then `ReadPacing` decides whether reading rests. Also what a rest runs at its
    /// end (one pass: a rest is there to gather one batch), without arming.
    private func drainAndDeliver(passes: Int) {
        pacing.drain(passes: passes, mayRest: source != nil) { first in
            deliver.map { readPass($0, first: first) }
        }
    }

    /// Up to `maxReadsPerBatch` reads, translated and delivered as one batch (after the `first`, only a batch with
    /// changes): the changes delivered, whether any read found records, and what the engine asked.
    private func readPass(_ deliver: (inout ChangeBatch) -> BackendPace, first: Bool)
        -> (changes: Int, readAny: Bool, pace: BackendPace)
    {
        batch.removeAll()
        var drained = false
        var readAny = false
        for _ in 0..<Self.maxReadsPerBatch {
            let n: Int
            do throws(Errno) { n = try inotify.read(into: readBuffer) } catch {
                logger.error("reading inotify events failed: \(error)")
                drained = true
                break
            }
            if n == 0 { drained = true; break }
            readAny = true
            InotifyRecords.forEach(in: UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])) { translate($0) }
            // A read that left room for the largest record took everything queued: the queue was empty then, as
            // a further read returning EAGAIN would say (a record queued since makes the set readable again).
            if n <= readBuffer.count - Self.largestRecord { drained = true; break }
        }
        // A rename split across reads pairs up in a later read; once the queue is empty, an unpaired
        // `IN_MOVED_FROM` means the entry left the watched trees.
        if drained {
            for cookie in pendingCookies {
                batch.append(.moveAbandoned, node: .none, move: MoveToken(raw: UInt64(cookie)))
            }
            pendingCookies.removeAll()
        }
        // Then the opens and closes, read after this instance: a trim decided on this batch knows every close
        // that came before the writes it saw. Those that came after a create or rename still queued here are
        // matched when it arrives (`LedgerUpdater`, deferred closes).
        let before = batch.changes.count
        opens?.read(into: &batch)
        let changes = batch.changes.count
        if changes > before { readAny = true }
        guard first || changes > 0 else { return (0, readAny, .rest) }
        return (changes, readAny, deliver(&batch))
    }

    /// The largest inotify record: its header and a name of `NAME_MAX` bytes with its terminator.
    private static let largestRecord = 16 + 256

    private func translate(_ r: InotifyRecords.Record) {
        if logger.logLevel <= .debug {
            logger.debug(
                "inotify wd=\(r.wd) \(r.maskDescription) cookie=\(r.cookie) \(PathBytes.display(Array(r.name)))")
        }
        if InotifyRecords.isOverflow(r) {
            pendingCookies.removeAll()
            batch.append(.overflow, node: .none)
            return
        }
        guard let node = wdToNode[r.wd] else { return }
        if InotifyRecords.isIgnored(r) {
            wdToNode[r.wd] = nil
            nodeToWd[node] = nil
            batch.append(.watchLost, node: node)
            return
        }
        if r.name.isEmpty {
            if InotifyRecords.isSelfGone(r) { batch.append(.directoryGone, node: node) }
            return
        }
        guard let kind = InotifyRecords.kind(of: r) else { return }
        var move = MoveToken.none
        if kind == .movedFrom || kind == .movedTo {
            move = MoveToken(raw: UInt64(r.cookie))
            if kind == .movedFrom { pendingCookies.insert(r.cookie) } else { pendingCookies.remove(r.cookie) }
        }
        batch.append(kind, node: node, name: r.name, isDirectory: r.isDirectory, move: move)
    }
}

/// An inotify watch as the rest of CacheWarden holds it: the watch descriptor in the low 32 bits and, where the
/// root tracks opens, the opens instance's descriptor + 1 in the high 32 (0: none).
extension WatchHandle {
    init(wd: Int32, opens: Int32?) {
        raw = UInt64(UInt32(bitPattern: wd)) | UInt64(opens.map { UInt32(bitPattern: $0) &+ 1 } ?? 0) << 32
        backend = .inotify
    }

    var wd: Int32 { Int32(bitPattern: UInt32(truncatingIfNeeded: raw)) }
    var opensWd: Int32? {
        let high = UInt32(truncatingIfNeeded: raw >> 32)
        return high == 0 ? nil : Int32(bitPattern: high &- 1)
    }
}

extension BackendFactory {
    /// The inotify backend (the default). `addWatchOverride` is a seam for tests: it decides the outcome of
    /// watching a directory (by its path) instead of the kernel.
    static func inotify(addWatchOverride: (@Sendable (String) -> Errno?)? = nil) -> BackendFactory {
        BackendFactory { queue, logger, _ throws(WardenError) in
            try InotifyBackend(queue: queue, logger: logger, addWatchOverride: addWatchOverride)
        }
    }
}
