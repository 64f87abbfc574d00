import SystemPackage
import Dispatch
import Glibc
import Logging
import Synchronization
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenLedger

/// A backend with no kernel interface: it "watches" every directory the walkers open (the paths `refuse` names
/// as if past the watch limit, served by polling — which the test scripts, as `RoutingBackend` would hand them to
/// `PollBackend`) and delivers only the changes a test scripts, by path relative to the root. With it the whole
/// pipeline — ledger, policies, evictor, sinks — runs on a real folder, and what happens on disk behind its back stays
/// unseen until the test says so.
final class FakeBackend: ChangeBackend, @unchecked Sendable {
    private let queue: DispatchQueue
    private let root: String
    private let refuse: @Sendable (String) -> Bool
    /// Paths of the directories the walkers watched, by handle (walker threads write it).
    private let handles = HandleTable()
    private var nodes: [String: NodeID] = [:]
    private var paths: [NodeID: String] = [:]
    /// Directories "past the limit": re-read when the test scripts `rereadFallbacks`.
    private var rereading = Set<NodeID>()
    private var deliver: ((inout ChangeBatch) -> BackendPace)?
    private(set) var suspensions = 0

    init(queue: DispatchQueue, root: String, refuse: @escaping @Sendable (String) -> Bool) {
        self.queue = queue
        self.root = root
        self.refuse = refuse
    }

    /// A factory that hands each backend it makes to `made`.
    static func factory(
        root: String, refuse: @escaping @Sendable (String) -> Bool = { _ in false },
        made: @escaping @Sendable (FakeBackend) -> Void
    ) -> BackendFactory {
        BackendFactory { queue, _, _ in
            let fake = FakeBackend(queue: queue, root: root, refuse: refuse)
            made(fake)
            return fake
        }
    }

    func directoryWatcher(for events: WatchEvents, route: WatchRoute) -> DirectoryWatcher {
        let (handles, refuse, root) = (self.handles, self.refuse, self.root)
        return DirectoryWatcher { fd, _, _ in
            let full = Syscall.readLink(fd.procPath) ?? ""
            let relative = full == root ? "" : String(full.dropFirst(root.count + 1))
            if refuse(relative) { return .servedPastLimit(handles.add(relative, backend: .poll), limit: 1) }
            return .watched(handles.add(relative, backend: .inotify))
        }
    }

    func adopt(_ attempt: WatchAttempt, for node: NodeID) -> WatchAdoption {
        guard let handle = attempt.handle, let path = handles.path(handle) else { return .none }
        let displaced = nodes[path].flatMap { $0 == node ? nil : $0 }
        if let displaced { paths[displaced] = nil }
        nodes[path] = node
        paths[node] = path
        if handle.backend == .poll { rereading.insert(node) } else { rereading.remove(node) }
        return .watched(displaced: displaced)
    }

    func unwatch(_ node: NodeID) {
        rereading.remove(node)
        guard let path = paths.removeValue(forKey: node) else { return }
        if nodes[path] == node { nodes[path] = nil }
    }

    func start(_ deliver: @escaping (inout ChangeBatch) -> BackendPace) throws(WardenError) { self.deliver = deliver }
    func suspend() { suspensions += 1 }
    func resume() { suspensions -= 1 }
    func stop() { deliver = nil; nodes.removeAll(); paths.removeAll(); rereading.removeAll() }
    var watchCount: Int { paths.count }
    var pastLimitNodes: [NodeID: BackendKind] { Dictionary(uniqueKeysWithValues: rereading.map { ($0, .poll) }) }
    func availability(of kind: BackendKind, at path: String?) -> String? {
        kind == .fanotify ? "the fake backend has no fanotify" : nil
    }

    // MARK: Scripting (from the test's thread)

    /// One scripted change: a name (a path relative to the root) in its directory, or a directory itself.
    enum Scripted {
        case created(String, isDirectory: Bool = false)
        case closedAfterWrite(String)
        /// An open, and a close after reading (watched for `order = opened` and `spare_open`).
        case opened(String)
        case closed(String)
        case deleted(String, isDirectory: Bool = false)
        case overflow
        case directoryGone(String)
        /// What a polling pass asks for: a re-read of every directory past the watch limit.
        case rereadFallbacks
    }

    /// Delivers `changes` as one batch on the engine's queue, as a kernel read would, and waits for it; returns
    /// how the engine wants reading to go on.
    @discardableResult
    func send(_ changes: [Scripted]) -> BackendPace? {
        queue.sync {
            var batch = ChangeBatch()
            for change in changes { append(change, to: &batch) }
            return deliver?(&batch)
        }
    }

    private func append(_ change: Scripted, to batch: inout ChangeBatch) {
        func named(_ kind: Change.Kind, _ path: String, isDirectory: Bool) {
            let (parent, name) = Self.split(path)
            guard let node = nodes[parent] else { preconditionFailure("no watched directory \(parent)") }
            Array(name.utf8).withUnsafeBytes { batch.append(kind, node: node, name: $0, isDirectory: isDirectory) }
        }
        switch change {
        case .created(let path, let isDirectory): named(.created, path, isDirectory: isDirectory)
        case .closedAfterWrite(let path): named(.closedAfterWrite, path, isDirectory: false)
        case .opened(let path): named(.opened, path, isDirectory: false)
        case .closed(let path): named(.closed, path, isDirectory: false)
        case .deleted(let path, let isDirectory): named(.deleted, path, isDirectory: isDirectory)
        case .overflow: batch.append(.overflow, node: .none)
        case .directoryGone(let path): if let node = nodes[path] { batch.append(.directoryGone, node: node) }
        case .rereadFallbacks:
            for node in rereading.sorted(by: { $0.raw < $1.raw }) { batch.append(.rescan, node: node) }
        }
    }

    static func split(_ path: String) -> (parent: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return ("", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }
}

/// The fake's handles: a number per watched directory, and its path (walker threads add to it).
private final class HandleTable: Sendable {
    private let table = Mutex<(next: UInt64, paths: [UInt64: String])>((1, [:]))

    func add(_ path: String, backend: BackendKind) -> WatchHandle {
        table.withLock { t in
            t.next += 1
            t.paths[t.next] = path
            return WatchHandle(raw: t.next, backend: backend)
        }
    }

    func path(_ handle: WatchHandle) -> String? { table.withLock { $0.paths[handle.raw] } }
}
