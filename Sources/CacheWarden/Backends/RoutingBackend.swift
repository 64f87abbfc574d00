import Dispatch
import Logging
import SystemPackage

/// The engine's backend when roots may differ: each directory goes to the backend its root's `WatchRoute` names
/// (inotify, or polling), and both deliver to the engine on its queue. The engine and the stages after it see one
/// backend and one stream of `Change`s, whatever serves each root; the pipeline stays one-way (a backend never
/// asks the ledger anything). A watch is adopted by the backend that made it: polling handles are tagged
/// (`PollPending.tag`, the top bit, which an inotify handle never sets: its high half is a watch descriptor + 1,
/// below 2³¹); `limitReached` comes only from inotify.
final class RoutingBackend: ChangeBackend, @unchecked Sendable {
    let inotify: any ChangeBackend
    let poll: PollBackend

    init(inotify: any ChangeBackend, poll: PollBackend) {
        self.inotify = inotify
        self.poll = poll
    }

    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        switch route.backend {
        case .inotify: inotify.directoryWatcher(for: events, route: route)
        case .poll: poll.directoryWatcher(for: events, route: route)
        }
    }

    func adopt(_ attempt: WatchAttempt, for node: NodeID, rereadEvery seconds: Int64) -> WatchAdoption {
        if case .watched(let handle) = attempt, PollPending.isPolling(handle) {
            return poll.adopt(attempt, for: node, rereadEvery: seconds)
        }
        return inotify.adopt(attempt, for: node, rereadEvery: seconds)
    }

    func unwatch(_ node: NodeID) {
        inotify.unwatch(node)
        poll.unwatch(node)
    }

    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) {
        try inotify.start(deliver)
        try poll.start(deliver)
    }

    func suspend() {
        inotify.suspend()
        poll.suspend()
    }

    func resume() {
        inotify.resume()
        poll.resume()
    }

    func stop() {
        inotify.stop()
        poll.stop()
    }

    var watchCount: Int { inotify.watchCount + poll.watchCount }
    var fallbackNodes: [NodeID] { inotify.fallbackNodes }
    func pollCost(_ root: RootID) -> PollPassCost? { poll.pollCost(root) }
}

extension BackendFactory {
    /// The library's default: inotify, or polling for the roots whose route says so (`backend`, and `auto` on
    /// network and FUSE filesystems). `addWatchOverride` is inotify's test seam.
    static func standard(addWatchOverride: (@Sendable (String) -> Errno?)? = nil) -> BackendFactory {
        BackendFactory { queue, logger, clock throws(WardenError) in
            let inotify = try InotifyBackend(queue: queue, logger: logger, clock: clock, addWatchOverride: addWatchOverride)
            return RoutingBackend(inotify: inotify, poll: PollBackend(queue: queue, clock: clock))
        }
    }
}
