import CacheWarden
import Dispatch
import Logging
import SystemPackage

/// Keeps a Prometheus text file up to date for node_exporter's textfile collector (`metrics_file`): counters from
/// the events it receives, gauges from the watcher's status (memory, no rescan). The file is replaced whole by a
/// rename (`AtomicFile`), at most once a second after changes and every `interval` seconds otherwise, on a queue
/// of its own: a slow disk never holds up the watcher.
///
/// `@unchecked Sendable`: its state is confined to `queue` ("cachewarden.metrics"): the public methods hop onto
/// it, the private ones check it with `assertOnQueue` (debug builds).
package final class MetricsFileSink: EventSink, @unchecked Sendable {
    package let path: String
    private let interval: Double
    private let logger: Logger
    private let queue = DispatchQueue(label: "cachewarden.metrics")
    private let metrics = WardenMetrics()
    /// Weak: the watcher holds this sink.
    private weak var watcher: Watcher?
    private var timer: DispatchSourceTimer?
    private var pending = false
    private var lastWrite: DispatchTime?
    private var lastError: Errno?
    private var finished = false

    /// A sink writing `path` (which should end in `.prom`); `interval`: seconds between writes without changes.
    package init(path: String, interval: Double = 15, logger: Logger = Logger(label: "cachewarden.metrics")) {
        self.path = path
        self.interval = interval
        self.logger = logger
    }

    /// Writes the file now, then keeps it up to date from `watcher`'s status. Call after `watcher.start()`.
    /// - Throws: `WardenError` when the first write fails (a folder that does not exist, no permission).
    package func start(watcher: Watcher) throws(WardenError) {
        let problem: Errno? = queue.sync {
            self.watcher = watcher
            return write()
        }
        if let problem { throw .system(operation: "write metrics file", path: path, errno: problem.rawValue) }
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(
            deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(min(500, interval * 100))))
        t.setEventHandler { [weak self] in _ = self?.write() }
        t.resume()
        queue.sync { timer = t }
    }

    package func receive(_ events: [WardenEvent]) {
        queue.async { [weak self] in
            guard let self, !self.finished else { return }
            self.metrics.record(events)
            self.scheduleSoon()
        }
    }

    /// The watcher stopped: the last counts are written and the timer ends. The file stays (node_exporter's
    /// `node_textfile_mtime_seconds` tells how old it is).
    package func finish() {
        queue.sync {
            guard !finished else { return }
            finished = true
            timer?.cancel()
            timer = nil
            _ = write(gauges: false)
        }
    }

    /// One write within a second of the last: changes are coalesced, never more than one file a second.
    private func scheduleSoon() {
        assertOnQueue(queue)
        guard !pending else { return }
        pending = true
        let earliest = (lastWrite ?? .now()) + 1.0
        queue.asyncAfter(deadline: max(earliest, .now())) { [weak self] in
            guard let self, !self.finished else { return }
            self.pending = false
            _ = self.write()
        }
    }

    /// Renders and replaces the file; returns what went wrong (also logged once per distinct problem).
    private func write(gauges: Bool = true) -> Errno? {
        assertOnQueue(queue)
        if gauges, let watcher { metrics.update(watcher.status(), groups: watcher.groups) }
        lastWrite = .now()
        do throws(Errno) {
            try AtomicFile.replace(path, with: metrics.render())
            lastError = nil
            return nil
        } catch {
            if error != lastError { logger.error("cannot write metrics file \(path): \(error)") }
            lastError = error
            return error
        }
    }
}
