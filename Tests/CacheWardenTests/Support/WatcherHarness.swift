import SystemPackage
import Dispatch
import Foundation
import Logging
import Synchronization
@testable import CacheWarden

/// Collects every event a watcher delivers. As a handler it sees them on the callback queue; as a sink, on the
/// watcher's queue, before the step that made them returns (what a manual clock's `advance` relies on).
final class EventLog: EventSink {
    private let events = Mutex<[WardenEvent]>([])
    func append(_ e: WardenEvent) { events.withLock { $0.append(e) } }
    func receive(_ batch: [WardenEvent]) { events.withLock { $0 += batch } }
    func finish() {}
    var all: [WardenEvent] { events.withLock { $0 } }

    var trims: [TrimReport] {
        all.compactMap {
            if case .trim(let t) = $0.kind { return t }; return nil
        }
    }
    var evictions: [Eviction] {
        all.compactMap {
            if case .evict(let e) = $0.kind { return e }; return nil
        }
    }
    var writes: [FileWritten] {
        all.compactMap {
            if case .write(let w) = $0.kind { return w }; return nil
        }
    }
    var names: [String] { all.map(\.name) }
    var lowDisks: [LowDiskReport] {
        all.compactMap {
            if case .lowDisk(let l) = $0.kind { return l }; return nil
        }
    }
}

/// A started watcher on one temporary tree, stopped when the harness is dropped.
final class WatcherHarness: Sendable {
    let tree: TemporaryTree
    let log = EventLog()
    let watcher: Watcher
    let name: String

    /// With a `clock`, the log is the watcher's sink (see `Watcher.init(settings:clock:disk:log:)`).
    init(
        _ tree: TemporaryTree, name: String = "cache", quota: Int64 = 0, basis: SizeBasis = .allocated,
        backend: BackendFactory = .standard(), clock: (any WardenClock)? = nil,
        configure: (inout DirectorySettings) -> Void = { _ in }
    ) throws {
        self.tree = tree
        self.name = name
        var dir = DirectorySettings(name: name, path: tree.path, quota: quota)
        configure(&dir)
        let log = self.log
        let settings = WardenSettings(directories: [dir], sizeBasis: basis)
        if let clock {
            watcher = Watcher(settings: settings, backend: backend, clock: clock, log: log)
        } else {
            watcher = Watcher(
                settings: settings, mode: .enforce, callbackQueue: nil, logger: Logger(label: "test"),
                backend: backend
            ) { log.append($0) }
        }
        try watcher.start()
    }

    deinit { watcher.stop() }

    var total: Int64 { watcher.totals().first { $0.dir == name }?.total ?? -1 }
    var files: Int { watcher.totals().first { $0.dir == name }?.files ?? -1 }

    /// Waits until the running totals equal a fresh scan of the disk (and stay equal over a short settle).
    func totalsMatchDisk(basis: SizeBasis = .allocated, timeout: Double = 20) -> Bool {
        eventually(timeout: timeout) {
            let disk = diskTotals(tree.path, basis: basis)
            return total == disk.total && files == disk.files
        }
    }
}

/// The inotify backend's factory, keeping the backend it made: for tests of its watch bookkeeping (its
/// descriptor, to count the kernel's watches in `/proc/self/fdinfo`; its map of watches to nodes).
final class InotifyCapture: Sendable {
    private let made = Mutex<InotifyBackend?>(nil)

    var factory: BackendFactory {
        BackendFactory { queue, logger, _ throws(WardenError) in
            let backend = try InotifyBackend(queue: queue, logger: logger)
            self.made.withLock { $0 = backend }
            return backend
        }
    }

    var backend: InotifyBackend? { made.withLock { $0 } }
    var descriptor: FileDescriptor? { backend?.descriptor }
}

/// The backends a guarantee test runs on here: inotify and polling always, fanotify where this process may mark
/// filesystems (root, Linux 5.9).
let testedBackends: [BackendChoice] = [.inotify, .poll] + (FanotifyGroup.unavailability == nil ? [.fanotify] : [])
