import CacheWardenLedger
import Dispatch
import Logging
import SystemPackage

/// The engine's backend: each directory goes to the backend its root's `WatchRoute` names (inotify, fanotify or
/// polling), and a directory inotify cannot watch because `fs.inotify.max_user_watches` is reached goes to the
/// route's `pastLimit` (fanotify or polling) instead of going blind. All three deliver to the engine on its
/// queue; the engine and the stages after it see one backend and one stream of `Change`s, whatever serves each
/// directory, and the pipeline stays one-way (a backend never asks the ledger anything). A watch is adopted by the
/// backend that made it (`WatchHandle.backend`).
///
/// `@unchecked Sendable`: confined to the engine's queue. It holds no queue of its own: each entry point forwards
/// to the backends, which check that queue with `assertOnQueue` (debug builds).
final class RoutingBackend: ChangeBackend, @unchecked Sendable {
    let inotify: any ChangeBackend
    let fanotify: any ChangeBackend
    let poll: any ChangeBackend
    /// Directories served past inotify's limit, and by which backend.
    private(set) var pastLimitNodes: [NodeID: BackendKind] = [:]

    init(inotify: any ChangeBackend, fanotify: any ChangeBackend, poll: any ChangeBackend) {
        self.inotify = inotify
        self.fanotify = fanotify
        self.poll = poll
    }

    private func backend(_ kind: BackendKind) -> any ChangeBackend {
        switch kind {
        case .inotify: inotify
        case .fanotify: fanotify
        case .poll: poll
        }
    }

    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        let primary = backend(route.backend).directoryWatcher(for: events, route: route)
        guard let pastLimit = route.pastLimit else { return primary }
        // Past the limit, the route's fallback; polling when that fails too (fanotify cannot mark every
        // filesystem: a btrfs subvolume, one without file handles).
        let fallback = backend(pastLimit).directoryWatcher(for: events, route: route)
        let last = pastLimit == .poll ? nil : poll.directoryWatcher(for: events, route: route)
        return DirectoryWatcher { fd, st, wanted in
            let attempt = primary.watch(fd, st, wanted)
            guard case .limitReached(let limit) = attempt else { return attempt }
            if case .watched(let handle) = fallback.watch(fd, st, wanted) {
                return .servedPastLimit(handle, limit: limit)
            }
            if let last, case .watched(let handle) = last.watch(fd, st, wanted) {
                return .servedPastLimit(handle, limit: limit)
            }
            return attempt
        }
    }

    /// Has the backend that made the watch adopt it, and the others let the node go: a directory read again (a
    /// polling pass, an overflow's re-read) may be watched by another backend than before — inotify again, once
    /// a watch was freed — and must not stay followed twice.
    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption {
        guard let handle = attempt.handle else { return .none }
        let adoption = backend(handle.backend).adopt(attempt, for: node)
        guard adoption != .none else { return adoption }
        for kind in BackendKind.allCases where kind != handle.backend { backend(kind).unwatch(node) }
        if case .servedPastLimit = attempt { pastLimitNodes[node] = handle.backend } else { pastLimitNodes[node] = nil }
        return adoption
    }

    func unwatch(_ node: NodeID) {
        pastLimitNodes[node] = nil
        inotify.unwatch(node)
        fanotify.unwatch(node)
        poll.unwatch(node)
    }

    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) {
        try inotify.start(deliver)
        try fanotify.start(deliver)
        try poll.start(deliver)
    }

    func suspend() {
        inotify.suspend()
        fanotify.suspend()
        poll.suspend()
    }

    func resume() {
        inotify.resume()
        fanotify.resume()
        poll.resume()
    }

    func stop() {
        inotify.stop()
        fanotify.stop()
        poll.stop()
        pastLimitNodes.removeAll()
    }

    var watchCount: Int { inotify.watchCount + fanotify.watchCount + poll.watchCount }
    func availability(of kind: BackendKind, at path: String?) -> String? {
        backend(kind).availability(of: kind, at: path)
    }
    func pollCost(_ root: RootID) -> PollPassCost? { poll.pollCost(root) }
}

extension BackendFactory {
    /// The library's default: inotify, fanotify or polling as each root's route says (`backend`, and `auto`'s
    /// rule), and fanotify or polling past inotify's watch limit. `addWatchOverride` is inotify's test seam;
    /// `fanotify: false` makes fanotify unavailable (tests of the polling fallback, as a process without
    /// `CAP_SYS_ADMIN` sees it).
    static func standard(addWatchOverride: (@Sendable (String) -> Errno?)? = nil, fanotify: Bool = true)
        -> BackendFactory
    {
        BackendFactory { queue, logger, clock throws(WardenError) in
            let inotify = try InotifyBackend(queue: queue, logger: logger, addWatchOverride: addWatchOverride)
            let fan: any ChangeBackend =
                fanotify ? FanotifyBackend(queue: queue, logger: logger) : UnavailableBackend(kind: .fanotify)
            return RoutingBackend(inotify: inotify, fanotify: fan, poll: PollBackend(queue: queue, clock: clock))
        }
    }
}
