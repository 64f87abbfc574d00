import Dispatch

/// Directories that could not be watched because the inotify watch limit (`fs.inotify.max_user_watches`) is
/// reached are not left blind: they are handed back for a re-read on a timer (which also retries the watch, so
/// raising the limit heals them). The timer exists only while some directory is unwatched.
/// Confined to the engine's queue (the timer fires there too), hence `@unchecked Sendable`.
final class InotifyFallback: @unchecked Sendable {
    private let queue: DispatchQueue
    /// The engine's clock: a test steps it instead of waiting for the re-reads.
    private let clock: any WardenClock
    private(set) var nodes = Set<NodeID>()
    private var timer: ClockTimer?
    private var rescan: (([NodeID]) -> Void)?

    init(queue: DispatchQueue, clock: any WardenClock) {
        self.queue = queue
        self.clock = clock
    }

    /// Adds `node`; `rescan` receives every waiting node each `seconds`.
    func add(_ node: NodeID, every seconds: Int64, rescan: @escaping ([NodeID]) -> Void) {
        nodes.insert(node)
        self.rescan = rescan
        guard timer == nil else { return }
        let interval = UInt64(max(1, seconds)) * 1_000_000_000
        timer = clock.schedule(at: clock.uptimeNanoseconds + interval, repeating: interval, on: queue) { @Sendable [weak self] in
            guard let self, !self.nodes.isEmpty else { return }
            self.rescan?(Array(self.nodes))
        }
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
