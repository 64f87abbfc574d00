import CFanotify
import CacheWardenLedger
import CacheWardenFilesystem
import Dispatch
import Logging
import Synchronization
import SystemPackage

/// The fanotify backend: one notification group, one mark per filesystem (`FAN_MARK_FILESYSTEM`), whatever the
/// number of directories — no per-directory kernel watch, no watch limit, nothing to add per directory while
/// indexing but a `name_to_handle_at`. Events name their directory by file handle (`FAN_REPORT_DFID_NAME`); the
/// backend maps the handles of the directories it follows to nodes (`FanotifyEvents`) and drops every other
/// event of the filesystem early. Renames arrive paired (`FAN_RENAME`, Linux 5.17; before it, as a deletion and
/// a creation). Needs `CAP_SYS_ADMIN` and Linux 5.9.
///
/// Two groups, as `FanotifyGroup` explains: the main one, and one for opens made the first time a root that
/// tracks them is followed. A group is made the first time it is needed, so a watcher that never needs fanotify
/// holds none (the kernel allows 128 per user). Both are held one-shot in a `ReadinessSet` set that a read
/// source on the engine's queue watches, as inotify's are: a filesystem mark reports every change on the
/// filesystem, and an always-armed descriptor would run the wake-up chain in every writing process; the opens
/// group is read after the main one, into the same batch. Confined to the engine's queue, except
/// `directoryWatcher`, which the walkers call from their threads.
/// `@unchecked Sendable` by that confinement: the engine's queue (`queue`), checked with `assertOnQueue` at the
/// entry points (debug builds).
final class FanotifyBackend: ChangeBackend, @unchecked Sendable {
    static let maxReadsPerBatch = 16
    static let coalescingDelay: DispatchTimeInterval = .milliseconds(2)

    private let queue: DispatchQueue
    private let logger: Logger
    private let made = Mutex<(main: FanotifyGroup?, opens: FanotifyGroup?)>((nil, nil))
    /// The groups in the readiness set (by descriptor).
    private var attached = Set<Int32>()
    private let pending = FanotifyPending()
    private var events = FanotifyEvents()
    private var readiness: ReadinessSet?
    private var source: DispatchSourceRead?
    private var deliver: ((inout ChangeBatch) -> BackendPace)?
    /// Suspensions and rests: the descriptors disarmed while held.
    private lazy var pacing = ReadPacing(
        queue: queue, delay: Self.coalescingDelay,
        hold: { [unowned self] in readiness?.disarm() }, release: { [unowned self] in readiness?.arm() })
    private var batch = ChangeBatch()
    private let readBuffer: UnsafeMutableRawBufferPointer
    /// Groups keep fanotify's default queue bound (a test seam: an overflow can then be made).
    private let bounded: Bool

    init(queue: DispatchQueue, logger: Logger, boundedQueues: Bool = false) {
        self.queue = queue
        self.logger = logger
        bounded = boundedQueues
        // A buffer this size holds hundreds of events; one event is at most a few hundred bytes.
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    }

    deinit {
        release()
        readBuffer.deallocate()
    }

    /// The main group, or the opens group, made on first use (from a walker's thread, hence the lock).
    private func group(opens: Bool) throws(Errno) -> FanotifyGroup {
        let result: Result<(FanotifyGroup, new: Bool), Errno> = made.withLock { groups in
            if let group = opens ? groups.opens : groups.main { return .success((group, false)) }
            do throws(Errno) {
                let group = try FanotifyGroup(
                    events: opens ? FanotifyGroup.openEvents : FanotifyGroup.mainEvents, bounded: bounded)
                if opens { groups.opens = group } else { groups.main = group }
                return .success((group, true))
            } catch { return .failure(error) }
        }
        let (group, new) = try result.get()
        // Reading starts on the engine's queue, before the walk's adoptions there: nothing queued is missed.
        if new { queue.async { @Sendable [weak self] in self?.attach() } }
        return group
    }

    func directoryWatcher(for wanted: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        let opens = wanted.contains(.opens)
        let walk = WalkMarks()
        return DirectoryWatcher { [self] fd, st, _ in
            do throws(Errno) {
                let device = UInt64(st.st_dev)
                let fsid: UInt64, tracked: Bool
                if let known = walk.marked(on: device) {
                    (fsid, tracked) = (known.fsid, opens && known.opens)
                } else {
                    // The top of a walk is marked again: a filesystem mounted anew lost its mark (fanotify says
                    // nothing).
                    let again = walk.takeTop()
                    fsid = try group(opens: false).mark(filesystemOf: fd, device: device, again: again)
                    // Open tracking is best effort: without it the directory is still counted exactly.
                    tracked =
                        opens && (try? group(opens: true).mark(filesystemOf: fd, device: device, again: again)) != nil
                    walk.remember(device: device, fsid: fsid, opens: tracked)
                }
                return .watched(pending.add(try FanotifyGroup.key(of: fd, fsid: fsid), opens: tracked))
            } catch {
                return .failed(error)
            }
        }
    }

    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption {
        assertOnQueue(queue)
        guard let handle = attempt.handle, let (key, opens) = pending.take(handle) else { return .none }
        return .watched(displaced: events.bind(key, opens: opens, to: node))
    }

    func unwatch(_ node: NodeID) {
        assertOnQueue(queue)
        events.unbind(node)
    }

    /// With a path, the filesystem there is marked, as following it would: a btrfs subvolume, a filesystem without
    /// file handles or one whose fsid another has is told here, before anything is read.
    func availability(of kind: BackendKind, at path: String?) -> String? {
        guard kind == .fanotify else { return "the fanotify backend serves fanotify only" }
        if let problem = FanotifyGroup.unavailability { return problem }
        guard let path else { return nil }
        do throws(Errno) {
            try Syscall.openDirectory(path: path).borrow { (directory) throws(Errno) in
                let fsid = try group(opens: false).mark(
                    filesystemOf: directory, device: UInt64(try Syscall.fstat(directory).st_dev))
                _ = try FanotifyGroup.key(of: directory, fsid: fsid)
            }
            return nil
        } catch {
            return FanotifyGroup.explain(error)
        }
    }

    var watchCount: Int { events.count }
    /// Filesystems marked, counted once per group (for tests).
    var markCount: Int { made.withLock { ($0.main?.markCount ?? 0) + ($0.opens?.markCount ?? 0) } }

    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) {
        assertOnQueue(queue)
        self.deliver = deliver
        pacing.read = { [unowned self] in self.drainAndDeliver(passes: 1) }
        attach()
    }

    /// Starts reading the groups made so far once delivery has started (on the engine's queue).
    private func attach() {
        assertOnQueue(queue)
        guard deliver != nil else { return }
        let groups = made.withLock { [$0.main, $0.opens].compactMap { $0 } }
        do throws(Errno) {
            if readiness == nil { readiness = try ReadinessSet() }
            for group in groups where !attached.contains(group.fd.rawValue) {
                try readiness!.add(group.fd)
                attached.insert(group.fd.rawValue)
            }
            if pacing.isSuspended { readiness!.disarm() }
        } catch {
            logger.error(
                "fanotify: cannot watch a group's descriptor (epoll: \(error)); its directories are not followed")
            return
        }
        guard source == nil, let readiness else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: readiness.fd.rawValue, queue: queue)
        source.setEventHandler { @Sendable [unowned self] in self.readBatch() }
        // The cancel handler holds the descriptors until the source is done with them (see InotifyBackend).
        let held = (groups, readiness)
        source.setCancelHandler { withExtendedLifetime(held) {} }
        source.resume()
        self.source = source
    }

    func suspend() { pacing.suspend() } // checked by `ReadPacing` (the same queue)

    func resume() { pacing.resume() } // checked by `ReadPacing` (the same queue)

    func stop() {
        assertOnQueue(queue)
        release()
    }

    /// What `stop` does, without the queue check: `deinit` runs on whichever thread drops the last reference, and
    /// nothing else can reach the backend then.
    private func release() {
        pacing.reset()
        source?.cancel()
        source = nil
        readiness = nil
        attached.removeAll()
        deliver = nil
        made.withLock { $0 = (nil, nil) } // closing a group drops its marks
        events.removeAll()
        pending.removeAll()
    }

    /// The read source's handler. The descriptors stay in the set while it runs: the source itself is one-shot
    /// (libdispatch re-arms it once the handler returns, and events queued meanwhile make it fire again at once).
    private func readBatch() {
        assertOnQueue(queue)
        guard !pacing.isSuspended else { return } // resume() arms again
        drainAndDeliver(passes: ReadPacing.passesPerWakeUp)
    }

    /// Up to `maxReadsPerBatch` reads of the main group, then of the opens group (a trim decided on this batch knows
    /// every close that came before the writes it saw), delivered as one batch; again while a pass finds events
    /// (`passes` at most: what came while a batch was processed is read in the same wake-up); then `ReadPacing`
    /// decides whether reading rests. Also what a rest runs at its end (one pass), without arming.
    private func drainAndDeliver(passes: Int) {
        let groups = made.withLock { $0 }
        guard let main = groups.main else { return }
        // The pace counts every event read, even those of other directories: a busy filesystem would otherwise
        // wake the reader, and every writer on it, once per event.
        pacing.drain(passes: passes, mayRest: source != nil) { first in
            guard let deliver else { return nil }
            batch.removeAll()
            var read = self.read(main, opens: false)
            if let opens = groups.opens { read += self.read(opens, opens: true) }
            if !first && read == 0 { return (0, false, .rest) }
            return (read, read > 0, deliver(&batch))
        }
    }

    /// Room a read leaves when it took every queued event: more than the largest event (metadata, two directory
    /// handles and two names, for a rename).
    private static let largestEvent = 4096

    /// Reads `group` into the batch; returns how many events were read (those of other directories included).
    @discardableResult
    private func read(_ group: FanotifyGroup, opens: Bool) -> Int {
        var readAny = 0
        for _ in 0..<Self.maxReadsPerBatch {
            let n: Int
            do throws(Errno) { n = try group.read(into: readBuffer) } catch {
                logger.error("reading fanotify events failed: \(error)")
                return readAny
            }
            if n == 0 { return readAny }
            let bytes = UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]).bindMemory(to: UInt8.self)
            var event = cfan_event()
            var offset = 0
            while offset < n {
                let next = cfan_next_event(bytes.baseAddress, n, offset, &event)
                guard next > offset else {
                    // Not an event this reader understands: what followed it in the read is lost, as in an overflow.
                    logger.error(
                        "fanotify: an undecodable event at byte \(offset) of \(n); re-reading as after an overflow")
                    batch.append(opens ? .opensLost : .overflow, node: .none)
                    break
                }
                events.translate(&event, opens: opens, into: &batch)
                readAny += 1
                offset = next
            }
            // Room for the largest event left: the read took everything queued (a further one would say EAGAIN).
            if n <= readBuffer.count - Self.largestEvent { return readAny }
        }
        return readAny
    }
}

/// What one walk's watcher marked: whether its top was seen (the top is marked again), and the device it marked
/// with its fsid and whether opens are followed there. A walk stays on one device (the walker checks it), so the
/// directories after the top skip the groups' locks and tables. Thread-safe: the top's call writes it before any
/// other directory of the walk is read (the top's children become visible to the walkers only after it); a call
/// that does not see it yet takes the groups' way, with the same result.
private final class WalkMarks: Sendable {
    private let top = Atomic<Bool>(true)
    /// 0: nothing marked yet; 1: the totals group; 2: both groups.
    private let state = Atomic<UInt8>(0)
    private let device = Atomic<UInt64>(0)
    private let fsid = Atomic<UInt64>(0)

    /// True for the walk's first call, then false.
    func takeTop() -> Bool { top.exchange(false, ordering: .relaxed) }

    func remember(device: UInt64, fsid: UInt64, opens: Bool) {
        self.device.store(device, ordering: .relaxed)
        self.fsid.store(fsid, ordering: .relaxed)
        state.store(opens ? 2 : 1, ordering: .releasing)
    }

    func marked(on device: UInt64) -> (fsid: UInt64, opens: Bool)? {
        let s = state.load(ordering: .acquiring)
        guard s != 0, self.device.load(ordering: .relaxed) == device else { return nil }
        return (fsid.load(ordering: .relaxed), s == 2)
    }
}
