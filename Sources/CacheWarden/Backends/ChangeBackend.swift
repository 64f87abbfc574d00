import CacheWardenLedger
import Dispatch
import Glibc
import Logging
import SystemPackage

/// What a backend hands out for a watched directory: a token only the backend that made it can read, and which
/// backend that is (how `RoutingBackend` hands it back).
struct WatchHandle: Hashable, Sendable {
    var raw: UInt64
    var backend: BackendKind
}

/// The outcome of asking a backend to watch a directory.
enum WatchAttempt: Sendable, Equatable {
    case watched(WatchHandle)
    /// The root's own backend had reached its limit on watches (inotify's `max_user_watches`, `limit`; −1 when
    /// unknown), and another one serves the directory instead (`handle.backend`: fanotify or polling).
    case servedPastLimit(WatchHandle, limit: Int)
    /// The backend's limit on watches is reached (not a disk problem) and nothing else serves the directory.
    case limitReached(limit: Int)
    case failed(Errno)

    /// The watch a backend made, if one did (`watched` or `servedPastLimit`).
    var handle: WatchHandle? {
        switch self {
        case .watched(let h), .servedPastLimit(let h, _): h
        case .limitReached, .failed: nil
        }
    }
}

/// What the backend made of a watch attempt the engine handed it for a node.
enum WatchAdoption: Equatable {
    /// Watched. `displaced` is another node the backend had under the same watch (the same directory under an
    /// old name whose rename was not paired): the directory lives at its new place now, and the caller drops
    /// the stale subtree.
    case watched(displaced: NodeID?)
    /// Nothing to adopt (the attempt failed: the caller reports why).
    case none
}

/// Which optional events a directory's watch reports, besides creations, writes, deletions and renames.
struct WatchEvents: OptionSet, Sendable, Hashable {
    let rawValue: UInt8
    /// Opens and closes of files for reading (`order = opened`, sparing open files).
    static let opens = WatchEvents(rawValue: 1)
}

/// The backends a root can be served by (`backend` in the config; `auto` is resolved when the root registers).
public enum BackendKind: String, Sendable, CaseIterable {
    /// Kernel notification: one inotify watch per directory.
    case inotify
    /// Kernel notification: one fanotify mark per filesystem (`CAP_SYS_ADMIN`, Linux 5.9).
    case fanotify
    /// Re-reading changed directories every `poll_interval` (network and FUSE filesystems).
    case poll
}

/// Which backend follows a root's directories, and how often a polling one looks: what the tree scanner hands
/// the backend with each directory. A backend serving one kind only ignores it; `RoutingBackend` routes by it.
struct WatchRoute: Sendable, Hashable {
    var root: RootID
    var backend: BackendKind
    /// Seconds between polling passes (`poll_interval`; used by the polling backend only).
    var pollInterval: Int64
    /// What serves the directories the root's backend cannot watch because its limit is reached (inotify's):
    /// fanotify or polling, or nil for none.
    var pastLimit: BackendKind? = nil
}

/// What one polling pass over a root cost: the `status` and metrics figures of a polled root.
public struct PollPassCost: Sendable, Equatable {
    /// How long the last pass took (statting every directory, re-reading those that changed), in seconds.
    public var seconds: Double
    /// Directories the last pass re-read.
    public var directoriesRead: Int
    /// Directories the last pass checked (one `lstat` each).
    public var directoriesChecked: Int

    public init(seconds: Double, directoriesRead: Int, directoriesChecked: Int) {
        self.seconds = seconds
        self.directoriesRead = directoriesRead
        self.directoriesChecked = directoriesChecked
    }
}

/// Watches directories for the tree walker. Thread-safe: parallel walkers call it from their own threads with a
/// directory descriptor they verified and its `fstat` (the backend never resolves a path).
struct DirectoryWatcher: Sendable {
    let watch: @Sendable (_ directory: FileDescriptor, _ status: stat, _ events: WatchEvents) -> WatchAttempt
}

/// How the engine wants the backend to go on after a batch, from the most to the least leisurely (of two, the
/// later wins: `max`).
enum BackendPace: Int, Comparable {
    /// Rest before the next read, short or long as the stream is worth it (`ReadPacing`), so that a writer's
    /// changes arrive in batches.
    case rest
    /// No long rest, only the short one a fast stream earns (a quota's trim level is within reach: a long rest
    /// would let a fast writer go unseen too long).
    case restBriefly
    /// Read again as soon as there is something to read.
    case keepReading

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// The seam between a kernel's change notification and the rest of CacheWarden. A backend turns its kernel
/// interface into `Change`s about ledger nodes: it owns the mapping from its watches to nodes, the pairing of
/// renames and the loss of watches. Nothing else knows how it does that, and it knows nothing of the stages after
/// it: it is told which directories to watch and delivers batches. Each backend is a folder of its own
/// (`Inotify/`, `Fanotify/`, `Poll/`); `RoutingBackend` serves each root by the one its `WatchRoute` names, and
/// the directories past inotify's limit by the route's `pastLimit`.
///
/// The tree scanner reaches it only through a `WatchPort`; the stages after the ledger updater never do. All
/// methods except `directoryWatcher(for:).watch` run on the engine's queue.
protocol ChangeBackend: AnyObject {
    /// What the tree walker calls to watch each directory it opens, for `events`, of the root `route` names.
    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher

    /// Takes over a walker's attempt for `node`: binds its watch (`.watched` or `.servedPastLimit`) to the node.
    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption

    /// Stops watching (or re-reading) `node`: it left the ledger. Unknown nodes are ignored.
    func unwatch(_ node: NodeID)

    /// Starts delivering changes on the engine's queue. `deliver` gets each batch and says how to go on.
    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError)

    /// Holds delivery (while a trim deletes, so its own deletions do not wake the reader one by one).
    func suspend()
    func resume()

    /// Stops delivering and releases every watch.
    func stop()

    /// Watches held now.
    var watchCount: Int { get }

    /// Directories served by another backend than their root's because its limit was reached, and by which.
    var pastLimitNodes: [NodeID: BackendKind] { get }

    /// Why this backend cannot serve `kind` now (fanotify needs `CAP_SYS_ADMIN` and Linux 5.9), or at `path` (a
    /// filesystem fanotify cannot mark), or nil when it can.
    func availability(of kind: BackendKind, at path: String?) -> String?

    /// The cost of the last polling pass over `root` (nil: the root is not polled, or no pass ran yet).
    func pollCost(_ root: RootID) -> PollPassCost?
}

extension ChangeBackend {
    func pollCost(_ root: RootID) -> PollPassCost? { nil }
    var pastLimitNodes: [NodeID: BackendKind] { [:] }
}

/// Makes the backend of a watcher each time it starts, on the engine's queue and clock (a backend's own timers,
/// such as polling passes, run on it). The engine is given one (the library's default
/// is inotify); tests give a scripted one.
struct BackendFactory: Sendable {
    let make:
        @Sendable (_ queue: DispatchQueue, _ logger: Logger, _ clock: any WardenClock) throws(WardenError) ->
            any ChangeBackend
}

/// What a tree scan may do with the backend, and nothing else: watch each directory it opens (from the walkers'
/// threads, before reading it, so no change is missed) and have that watch bound to the node the directory
/// became (on the engine's queue, at once, so a stale node the watch displaces is gone before the scan reports
/// any total). The engine makes it from its backend; the scanner never sees the backend.
struct WatchPort {
    let watcher: (WatchEvents, WatchRoute) -> DirectoryWatcher
    let adopt: (WatchAttempt, NodeID) -> WatchAdoption

    init(_ backend: any ChangeBackend) {
        watcher = backend.directoryWatcher(for:route:)
        adopt = backend.adopt(_:for:)
    }
}
