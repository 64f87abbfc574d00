import CacheWarden
import Dispatch
import FoundationEssentials
import Glibc

/// Keeps systemd's one-line `STATUS=` (what `systemctl status` shows) current: directories, bytes, and the last
/// trim, sent at most once a second after changes. The totals come from the events themselves (every `ready`,
/// `write`, `trim` and `rescan` carries its directory's total), so it never asks the watcher anything.
///
/// `@unchecked Sendable`: its state is confined to `queue` ("cachewarden.systemd-status"): the public methods hop
/// onto it, the private ones check it with `assertOnQueue` (debug builds).
package final class SystemdStatusSink: EventSink, @unchecked Sendable {
    private let notifier: SystemdNotifier
    private let queue = DispatchQueue(label: "cachewarden.systemd-status")
    private var totals: [String: Int64] = [:]
    private var lastTrim: String?
    private var pending = false
    private var lastSent: DispatchTime?
    private var finished = false

    package init(notifier: SystemdNotifier) {
        self.notifier = notifier
    }

    /// The summary as it stands.
    package var summary: String { queue.sync { line() } }

    package func receive(_ events: [WardenEvent]) {
        guard notifier.isEnabled else { return }
        queue.async { [self] in
            guard !finished else { return }
            for e in events { apply(e) }
            scheduleSoon()
        }
    }

    package func finish() { queue.sync { finished = true } }

    private func apply(_ event: WardenEvent) {
        assertOnQueue(queue)
        switch event.kind {
        case .ready(let t), .status(let t): totals[t.dir] = t.total
        case .write(let w): totals[w.dir] = w.total
        case .rescan(let r): totals[r.dir] = r.total
        case .stop(let t): totals[t.dir] = nil
        case .trim(let t):
            totals[t.dir] = t.total
            lastTrim =
                "last trim \(t.dir) \(t.removed) files \(ByteText.iec(t.freed)) (\(t.reason.rawValue)) at \(Self.clock(event.time))"
        default: break
        }
    }

    /// The local wall-clock time as `HH:MM:SS`, from `localtime_r` (the system's time zone, `TZ` or
    /// /etc/localtime). Not `DateFormatter`: it is Foundation's, and would bring ICU's locale data into
    /// the binary for one time of day; a journal reader wants a plain 24-hour clock anyway.
    static func clock(_ time: Date) -> String {
        var seconds = time_t(time.timeIntervalSince1970.rounded(.down))
        var tm = tm()
        guard localtime_r(&seconds, &tm) != nil else { return "?" }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))"
    }

    private func line() -> String {
        assertOnQueue(queue)
        let bytes = totals.values.reduce(0, +)
        return "\(totals.count) dirs, \(ByteText.iec(bytes))" + (lastTrim.map { "; \($0)" } ?? "")
    }

    private func scheduleSoon() {
        assertOnQueue(queue)
        guard !pending else { return }
        pending = true
        let earliest = (lastSent ?? .now()) + 1.0
        queue.asyncAfter(deadline: max(earliest, .now())) { [self] in
            pending = false
            guard !finished else { return }
            lastSent = .now()
            notifier.status(line())
        }
    }
}
