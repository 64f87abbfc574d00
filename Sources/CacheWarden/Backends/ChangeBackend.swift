import SystemPackage

/// What a backend hands out for a watched directory; what it holds inside is the backend's business.
struct WatchHandle: Hashable, Sendable {
    var raw: Int32
    /// The inotify backend's second watch, for opens (nil when the root does not track them).
    var opens: Int32? = nil
}

/// The outcome of asking a backend to watch a directory.
enum WatchAttempt: Sendable, Equatable {
    case watched(WatchHandle)
    /// The backend's limit on watches is reached (not a disk problem); `limit` is that limit (−1 when unknown).
    case limitReached(limit: Int)
    case failed(Errno)
}

/// Which optional events a directory's watch reports, besides creations, writes, deletions and renames.
struct WatchEvents: OptionSet, Sendable, Hashable {
    let rawValue: UInt8
    /// Opens and closes of files for reading (`order = opened`, sparing open files).
    static let opens = WatchEvents(rawValue: 1)
}

/// Watches directories for the tree walker. Thread-safe: parallel walkers call it from their own threads with a
/// directory descriptor they verified (the backend never resolves a path).
struct DirectoryWatcher: Sendable {
    let watch: @Sendable (_ directory: Int32, _ events: WatchEvents) -> WatchAttempt
}

/// How the engine wants the backend to go on after a batch.
enum BackendPace {
    /// Rest briefly before the next read, so that a busy writer's changes arrive in batches.
    case rest
    /// Read again as soon as there is something to read.
    case keepReading
}

/// The seam between the kernel's change notification and the rest of CacheWarden. A backend turns its kernel
/// interface into `Change`s about ledger nodes: it owns the mapping from its watches to nodes, the pairing of
/// renames, the loss of watches and its own fallbacks. Nothing else in CacheWarden knows how it does that; a
/// second backend (fanotify, a polling backend for NFS) is a new folder beside `Inotify/`.
///
/// All methods except `directoryWatcher.watch` run on the engine's queue.
protocol ChangeBackend: AnyObject {
    /// What the tree walker calls to watch each directory it opens, for `events`.
    func directoryWatcher(for events: WatchEvents) -> DirectoryWatcher

    /// Associates a watch the walker obtained with the node it read. If the backend already had that watch for
    /// another node (the same directory under an old name whose rename was not paired), the other node is
    /// returned: the directory lives at its new place now, and the caller drops the stale subtree.
    func bind(_ handle: WatchHandle, to node: NodeID) -> NodeID?

    /// Stops watching `node` (removed from the ledger). Unknown nodes are ignored.
    func unwatch(_ node: NodeID)

    /// Whether `node` is watched.
    func isWatched(_ node: NodeID) -> Bool

    /// `node` could not be watched because the limit is reached: the backend asks for it to be read again
    /// (`Change.Kind.rescan`) on a timer of its own until a watch succeeds.
    func fallBack(_ node: NodeID, every seconds: Int64)

    /// Whether `node` is waiting on that timer.
    func isFallingBack(_ node: NodeID) -> Bool

    /// Every directory waiting on that timer (few: only those past the watch limit).
    var fallbackNodes: [NodeID] { get }

    /// Starts delivering changes on the engine's queue. `deliver` gets each batch and says how to go on.
    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError)

    /// Holds delivery (e.g. while a trim deletes, so its own deletions do not wake the reader one by one).
    func suspend()
    func resume()

    /// Stops delivering and releases every watch.
    func stop()

    /// Watches currently held.
    var watchCount: Int { get }
}
