import CInotify
import Dispatch
import Foundation
import Logging
import SystemPackage

/// The runtime of one registered root.
struct RootRuntime {
    var id: Int32
    var settings: DirectorySettings
    /// Canonical absolute path (symlinks in its ancestors resolved once, at registration).
    var path: String
    var pathBytes: [UInt8]
    var protect: GlobMatcher
    var exclude: GlobMatcher
    /// The root was deleted or replaced: nothing is counted until it reappears.
    var lost = false
    /// A lost root came back as a symlink and that was reported once.
    var reportedSymlink = false
    /// `order = btime` on a filesystem without birth times was reported once.
    var reportedNoBirthTime = false
}

/// The whole mutable state of a watcher, confined to one serial queue (`queue`): every method below runs on it.
/// This is the one type that is `@unchecked Sendable`; the confinement is what makes that true.
final class Engine: @unchecked Sendable {
    let queue: DispatchQueue
    let callbackQueue: DispatchQueue
    let handler: (@Sendable (WardenEvent) -> Void)?
    let logger: Logger
    /// A seam for tests: replaces `inotify_add_watch` (e.g. to inject `ENOSPC`).
    let addWatchOverride: (@Sendable (String) -> Errno?)?
    let dryRun: Bool

    var settings: WardenSettings
    var ledger = SizeLedger()
    var roots: [Int32: RootRuntime] = [:]
    var rootOrder: [Int32] = []
    var nextRootID: Int32 = 0
    var inotify: InotifyDescriptor?
    var source: DispatchSourceRead?
    /// The read source is paused for `coalescingDelay` after a busy batch (see `EventRouter.drain`).
    var sourcePaused = false
    var wdToNode: [Int32: Int32] = [:]
    var running = false
    var stopped = false

    /// Renames waiting for their `IN_MOVED_TO` partner, by cookie.
    var pendingMoves: [UInt32: PendingMove] = [:]
    /// Records to stat once at the end of the batch, in first-seen order, with what was seen.
    var dirty: [Int32: DirtyFlags] = [:]
    var dirtyOrder: [Int32] = []
    var touchedRoots = Set<Int32>()
    var overflowSeen = false
    var readBuffer: UnsafeMutableRawBufferPointer
    var decoded: [InotifyEvent] = []

    var outbox: [WardenEvent] = []
    var streams: [UUID: AsyncStream<WardenEvent>.Continuation] = [:]
    var timers: [DispatchSourceTimer] = []
    var rearmTimer: DispatchSourceTimer?
    /// Directories that could not be watched (`ENOSPC`: the watch limit) and are re-read on a timer instead.
    var blindNodes = Set<Int32>()
    /// Directories that appeared but could not be opened yet (parent renamed, records still queued).
    var appearedRetry: [(parent: Int32, name: [UInt8], root: Int32)] = []
    /// Directory nodes that could not be read yet for the same reason.
    var unreadNodes = Set<Int32>()
    var blindTimer: DispatchSourceTimer?
    var lowDisk = LowDiskMonitor()

    init(settings: WardenSettings, callbackQueue: DispatchQueue, handler: (@Sendable (WardenEvent) -> Void)?,
         dryRun: Bool, logger: Logger, addWatchOverride: (@Sendable (String) -> Errno?)?) {
        self.settings = settings
        self.queue = DispatchQueue(label: "cachewarden.engine")
        self.callbackQueue = callbackQueue
        self.handler = handler
        self.dryRun = dryRun
        self.logger = logger
        self.addWatchOverride = addWatchOverride
        // 64 KiB holds ~1,300 records; NAME_MAX + 1 + header is the minimum the kernel needs for one.
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    }

    deinit { readBuffer.deallocate() }

    // MARK: Lifecycle (on `queue`)

    func start() throws(WardenError) {
        guard !running else { throw .alreadyRunning }
        do throws(ConfigError) { try settings.validate(checkingPaths: false) } catch { throw .invalidSettings(error) }
        do throws(Errno) { inotify = try InotifyDescriptor() } catch {
            throw .inotifyUnavailable(error == .tooManyOpenFiles
                ? "EMFILE: fs.inotify.max_user_instances = \(cinotify_max_user_instances()) reached" : "\(error)")
        }
        do throws(WardenError) {
            for dir in settings.directories { try addRoot(dir) }
        } catch {
            teardown()
            throw error
        }
        running = true
        stopped = false
        let source = DispatchSource.makeReadSource(fileDescriptor: inotify!.fd, queue: queue)
        source.setEventHandler { @Sendable [unowned self] in self.drain() }
        source.resume()
        self.source = source
        for id in rootOrder { emitReady(id) }
        for id in rootOrder { runStartupPolicies(id) }
        startTimers()
        deliver()
    }

    func stop() {
        guard running else { return }
        running = false
        stopped = true
        for id in rootOrder { if let t = totals(id) { emit(.stop(t)) } }
        teardown()
        deliver()
        for c in streams.values { c.finish() }
        streams.removeAll()
    }

    private func teardown() {
        if sourcePaused { source?.resume(); sourcePaused = false }   // a suspended source must not be released
        source?.cancel()
        source = nil
        for t in timers { t.cancel() }
        timers.removeAll()
        rearmTimer?.cancel()
        rearmTimer = nil
        blindTimer?.cancel()
        blindTimer = nil
        blindNodes.removeAll()
        appearedRetry.removeAll()
        unreadNodes.removeAll()
        // The read source must not outlive the descriptor: cancel first, close after.
        if let fd = inotify { fd.close() }
        inotify = nil
        ledger = SizeLedger()
        roots.removeAll()
        rootOrder.removeAll()
        wdToNode.removeAll()
        pendingMoves.removeAll()
        dirty.removeAll()
        dirtyOrder.removeAll()
    }

    // MARK: Events out

    func emit(_ kind: WardenEvent.Kind) {
        outbox.append(WardenEvent(kind))
    }

    func emitError(_ message: String, dir: String? = nil, file: String? = nil, kind: String? = nil) {
        emit(.error(WardenIssue(message: message, dir: dir, file: file, kind: kind)))
    }

    /// Hands the batch's events to the callback queue and the async streams (one hop per batch, not per event).
    func deliver() {
        guard !outbox.isEmpty else { return }
        let batch = outbox
        outbox.removeAll(keepingCapacity: true)
        if let handler {
            callbackQueue.async { for e in batch { handler(e) } }
        }
        for c in streams.values { for e in batch { c.yield(e) } }
    }

    func addStream() -> AsyncStream<WardenEvent> {
        let (stream, continuation) = AsyncStream<WardenEvent>.makeStream(bufferingPolicy: .bufferingNewest(65536))
        if stopped { continuation.finish(); return stream }
        let id = UUID()
        streams[id] = continuation
        let queue = self.queue
        continuation.onTermination = { @Sendable [weak self] _ in
            queue.async { [weak self] in self?.streams[id] = nil }
        }
        return stream
    }

    // MARK: Queries

    func totals(_ id: Int32) -> DirectoryTotals? {
        guard let rt = roots[id] else { return nil }
        let account = ledger.accounts[id]
        return DirectoryTotals(dir: rt.settings.name, path: rt.path, total: account?.total ?? 0,
                               files: account?.files ?? 0, quota: rt.settings.quota)
    }

    func allTotals() -> [DirectoryTotals] { rootOrder.compactMap { totals($0) } }

    func rootID(named name: String) -> Int32? { rootOrder.first { roots[$0]?.settings.name == name } }

    func emitReady(_ id: Int32) {
        if let t = totals(id) { emit(.ready(t)) }
    }

    func emitStatus() {
        for id in rootOrder { if let t = totals(id) { emit(.status(t)) } }
        deliver()
    }

    /// The counted size of a stat result under the configured basis.
    func bytes(_ st: stat) -> Int64 {
        settings.sizeBasis == .allocated ? Int64(st.st_blocks) * 512 : Int64(st.st_size)
    }

    /// A file name (raw bytes) as a `String` for events: invalid UTF-8 becomes U+FFFD.
    static func display(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static func nowNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// A rename half seen (`IN_MOVED_FROM`) and waiting for its `IN_MOVED_TO`.
enum PendingMove {
    case file(record: Int32)
    case directory(node: Int32, root: Int32)
}

/// What a batch saw about one file, decided when it is statted at the end of the batch.
struct DirtyFlags: OptionSet {
    let rawValue: UInt8
    static let modified = DirtyFlags(rawValue: 1)
    static let closed = DirtyFlags(rawValue: 2)
    static let movedIn = DirtyFlags(rawValue: 4)
}
