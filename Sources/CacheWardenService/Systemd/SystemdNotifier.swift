import CacheWarden
import Dispatch
import FoundationEssentials
import Glibc

/// systemd's notify protocol without linking libsystemd: one datagram per message to `$NOTIFY_SOCKET` (a path,
/// or Linux's abstract namespace when it starts with `@`), as sd_notify(3) describes. `READY=1`, `STATUS=`,
/// `RELOADING=1` with `MONOTONIC_USEC=`, `STOPPING=1`, and `WATCHDOG=1` pings when `$WATCHDOG_USEC` asks for them
/// (and `$WATCHDOG_PID`, when set, names this process). Without `$NOTIFY_SOCKET` every call does nothing.
package struct SystemdNotifier: Sendable {
    package let socket: String?
    /// A quarter of `$WATCHDOG_USEC`: how often to ping (nil: no watchdog). systemd acts after a whole period
    /// without a ping; at a quarter, a ping that comes late or not at all still leaves no gap over half of it.
    package let watchdogInterval: Double?

    package init(environment given: [String: String]? = nil) {
        let environment = given ?? ProcessEnvironment.variables
        socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0 {
            watchdogInterval = usec / 4 / 1e6
        } else {
            watchdogInterval = nil
        }
    }

    package var isEnabled: Bool { socket != nil }

    /// Sends `fields` (`READY=1`, …) as one message; errors are ignored, as sd_notify's callers do.
    package func notify(_ fields: [String]) {
        guard let socket else { return }
        try? UnixSocket.sendDatagram(Array(fields.joined(separator: "\n").utf8), to: socket)
    }

    package func ready(status: String) { notify(["READY=1", "STATUS=\(status)"]) }
    package func status(_ line: String) { notify(["STATUS=\(line)"]) }
    package func stopping() { notify(["STOPPING=1", "STATUS=stopping"]) }
    package func watchdog() { notify(["WATCHDOG=1"]) }

    /// `RELOADING=1` with the monotonic time in microseconds (systemd 253 and later match it to the reload).
    package func reloading() {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        notify([
            "RELOADING=1", "MONOTONIC_USEC=\(Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)",
            "STATUS=reloading",
        ])
    }
}
