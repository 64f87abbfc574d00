import CInotify
import CacheWardenLedger
import Logging
import SystemPackage

/// A second inotify instance that reports only opens and closes (`IN_OPEN`, `IN_CLOSE_WRITE`, `IN_CLOSE_NOWRITE`),
/// for the directories whose roots track open files (`spare_open`, `order = opened`).
///
/// Why a separate instance: opens are by far the noisiest events — every `find`, `du`, backup run or the
/// watcher's own scans open every directory — and in the instance that keeps the totals they filled the kernel's
/// queue (`max_queued_events`, 16,384) on a tree of ~10k directories, so the watcher's own rescan after the
/// overflow overflowed it again, for ever. Here an overflow costs only what this instance knows: which files are
/// open right now (the ledger forgets its open counts, `Change.Kind.opensLost`); the totals stay exact and nothing
/// is re-read. It has no reader of its own: its descriptor is in the backend's `ReadinessSet`, and the backend
/// reads it after its own. Confined to the engine's queue, except `addWatch`, which walkers call from their threads.
/// `@unchecked Sendable` by that confinement: the engine's queue. It holds no queue of its own; its one caller,
/// `InotifyBackend`, checks that queue with `assertOnQueue` at the entry points that reach it.
final class InotifyOpens: @unchecked Sendable {
    /// The events this instance reports. Directories' own opens (`IN_ISDIR`) are dropped as they are read.
    static let mask = InotifyDescriptor.opensEvents

    private let logger: Logger
    let inotify: InotifyDescriptor
    private var wdToNode: [Int32: NodeID] = [:]
    private var nodeToWd: [NodeID: Int32] = [:]
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)

    init(logger: Logger) throws(Errno) {
        self.logger = logger
        inotify = try InotifyDescriptor()
    }

    deinit {
        stop()
        buffer.deallocate()
    }

    /// Watches the verified directory `fd` for opens; nil when it cannot (open tracking is best effort: a
    /// directory without this watch is still counted exactly by the main instance).
    func addWatch(directory fd: FileDescriptor) -> Int32? {
        try? inotify.addWatch(directory: fd, mask: Self.mask)
    }

    func bind(_ wd: Int32, to node: NodeID) {
        if let other = wdToNode[wd], other != node { nodeToWd[other] = nil }
        if let old = nodeToWd[node], old != wd { wdToNode[old] = nil }
        wdToNode[wd] = node
        nodeToWd[node] = wd
    }

    func unwatch(_ node: NodeID) {
        guard let wd = nodeToWd.removeValue(forKey: node) else { return }
        wdToNode[wd] = nil
        inotify.removeWatch(wd)
    }

    private var stopped = false

    /// Drops every watch (the backend has taken the descriptor out of its readiness set; it closes when this
    /// instance goes). Idempotent.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for wd in wdToNode.keys { inotify.removeWatch(wd) }
        wdToNode.removeAll()
        nodeToWd.removeAll()
    }

    /// Appends what this instance has queued (up to `InotifyBackend.maxReadsPerBatch` reads) to `batch`: the
    /// backend calls it after reading its own instance, so the opens and closes go in the same batch, after the
    /// creates and renames.
    func read(into batch: inout ChangeBatch) {
        guard !stopped else { return }
        for _ in 0..<InotifyBackend.maxReadsPerBatch {
            guard let n = try? inotify.read(into: buffer), n > 0 else { break }
            InotifyRecords.forEach(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n])) { translate($0, &batch) }
            if n <= buffer.count - 16 - 256 { break } // room for the largest record left: the queue was emptied
        }
    }

    private func translate(_ r: InotifyRecords.Record, _ batch: inout ChangeBatch) {
        if InotifyRecords.isOverflow(r) {
            logger.debug("inotify opens queue overflowed: open counts forgotten (totals unaffected)")
            batch.append(.opensLost, node: .none)
            return
        }
        guard let node = wdToNode[r.wd] else { return }
        if InotifyRecords.isIgnored(r) {
            wdToNode[r.wd] = nil
            nodeToWd[node] = nil
            return
        }
        guard !r.name.isEmpty, !r.isDirectory else { return }
        if r.has(CINOTIFY_IN_OPEN) {
            batch.append(.opened, node: node, name: r.name)
        } else if r.has(CINOTIFY_IN_CLOSE_WRITE) || r.has(CINOTIFY_IN_CLOSE_NOWRITE) {
            batch.append(.closed, node: node, name: r.name)
        }
    }
}
