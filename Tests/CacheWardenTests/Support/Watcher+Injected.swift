import Logging
@testable import CacheWarden

extension Watcher {
    /// A watcher on `clock` and `disk` whose events go to `log` as a sink: by the time a call into it or a clock
    /// step returns, `log` holds what it emitted.
    convenience init(
        settings: WardenSettings, backend: BackendFactory = .standard(), clock: any WardenClock,
        disk: any DiskProbe = SystemDiskProbe(), log: EventLog
    ) {
        self.init(
            settings: settings, mode: .enforce, callbackQueue: nil, sinks: [log],
            logger: Logger(label: "cachewarden-test"),
            backend: backend, clock: clock, disk: disk, handler: nil)
    }
}
