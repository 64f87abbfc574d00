import Dispatch

/// Directories that could not be watched because the inotify watch limit (`fs.inotify.max_user_watches`) is
/// reached are not left blind: they are handed back for a re-read on a timer (which also retries the watch, so
/// raising the limit heals them). The timer exists only while some directory is unwatched.
/// Confined to the engine's queue (the timer fires there too), hence `@unchecked Sendable`.
final class InotifyFallback: @unchecked Sendable {
    private let queue: DispatchQueue
    private(set) var nodes = Set<NodeID>()
    private var timer: DispatchSourceTimer?
    private var rescan: (([NodeID]) -> Void)?

    init(queue: DispatchQueue) { self.queue = queue }

    /// Adds `node`; `rescan` receives every waiting node each `seconds`.
    func add(_ node: NodeID, every seconds: Int64, rescan: @escaping ([NodeID]) -> Void) {
        nodes.insert(node)
        self.rescan = rescan
        guard timer == nil else { return }
        let interval = Int(max(1, seconds))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .seconds(interval), repeating: .seconds(interval), leeway: .milliseconds(200))
        timer.setEventHandler { @Sendable [weak self] in
            guard let self, !self.nodes.isEmpty else { return }
            self.rescan?(Array(self.nodes))
        }
        timer.resume()
        self.timer = timer
    }

    /// `node` is watched now, or gone.
    func remove(_ node: NodeID) {
        guard nodes.remove(node) != nil, nodes.isEmpty else { return }
        cancel()
    }

    func cancel() {
        timer?.cancel()
        timer = nil
        rescan = nil
        nodes.removeAll()
    }
}
