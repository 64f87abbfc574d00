import CacheWardenLedger
import SystemPackage

/// A backend that serves nothing: what `RoutingBackend` holds in place of fanotify when a test makes it
/// unavailable, as it is to a process without `CAP_SYS_ADMIN`.
final class UnavailableBackend: ChangeBackend {
    let kind: BackendKind

    init(kind: BackendKind) {
        self.kind = kind
    }

    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        DirectoryWatcher { _, _, _ in .failed(.notPermitted) }
    }

    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption { .none }
    func unwatch(_ node: NodeID) {}
    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) {}
    func suspend() {}
    func resume() {}
    func stop() {}
    var watchCount: Int { 0 }
    func availability(of kind: BackendKind, at path: String?) -> String? {
        "\(kind.rawValue) is not available to this watcher"
    }
}
