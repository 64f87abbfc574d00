/// A budget several directories share (`group.<g>.*`): when their sum crosses `quota`, the group is trimmed to
/// `trimTo`, taking each time the oldest file of the member furthest above its fair share (the quota split by
/// the members' weights) — or least under it, once all are under.
public struct GroupSettings: Sendable, Equatable {
    /// The name used in `dir.<name>.group` and in events (`"group"`).
    public var name: String
    /// The shared size limit in bytes.
    public var quota: Int64
    /// What a group trim brings the sum down to (default half the quota).
    public var trimTo: SizeLimit

    public init(name: String, quota: Int64, trimTo: SizeLimit = .percent(50)) {
        self.name = name
        self.quota = quota
        self.trimTo = trimTo
    }
}

/// Settings of the whole watcher: what the `key = value` config file holds, buildable in code.
public struct WardenSettings: Sendable {
    /// How file sizes are counted in every directory.
    public var sizeBasis: SizeBasis
    /// The registered directories, in config order.
    public var directories: [DirectorySettings]
    /// Shared budgets of several directories.
    public var groups: [GroupSettings] = []
    /// Seconds between age-expiry passes; `nil` derives it from each directory's `maxAge` (a tenth, 1 s…1 h).
    public var expireInterval: Int64?
    /// Free-space threshold for every registered directory's filesystem; `nil` disables low-disk checks.
    public var lowDiskFree: SizeLimit?
    /// The high watermark of a low-disk purge: it goes on until this much is free (`low_disk_target`; nil: as
    /// `lowDiskFree`). At least `lowDiskFree`.
    public var lowDiskTarget: SizeLimit?
    /// What a low-disk crossing does.
    public var lowDiskAction: LowDiskAction
    /// Seconds between timer-driven free-space checks (writes also trigger rate-limited checks).
    public var lowDiskInterval: Int64
    /// The Unix socket `cachewarden run` answers requests on (`control_socket`; relative to the config file's folder;
    /// default `$RUNTIME_DIRECTORY/cachewarden.sock` under systemd, otherwise none).
    public var controlSocket: String?
    /// The socket file's mode (`control_socket_mode`, octal; default 0600). With group bits, the socket gets the
    /// group of its folder.
    public var controlSocketMode: UInt16 = 0o600
    /// The Prometheus text file to keep up to date for node_exporter's textfile collector (`metrics_file`).
    public var metricsFile: String?
    /// Seconds between metric writes when nothing changes (`metrics_interval`, 15 s); after changes at most once a
    /// second.
    public var metricsInterval: Int64 = 15
    /// The config file these settings were loaded from (`load(configFile:)`): no root may hold it.
    public var configFile: String?
    /// Which backend follows the directories that do not name one (`backend`; default `auto`).
    public var backend: BackendChoice = .auto
    /// Seconds between polling passes over a polled directory that does not set its own (`poll_interval`, 30 s:
    /// the default `acdirmin` of NFS, below which a poll mostly reads the client's cached attributes).
    public var pollInterval: Int64 = 30
    /// Where `cachewarden run` sends events (`events_to`; default `stdout`: see docs/service.md, Journal).
    public var eventsTo: EventsDestination = .stdout
    /// Seconds a trim may wait for a client's lock before an `error` line says so (`client_lock_wait`, 1 h); it
    /// goes on waiting: a client's lock is never broken.
    public var clientLockWait: Int64 = 3600

    /// Settings for `directories`; other settings take their defaults.
    public init(
        directories: [DirectorySettings] = [], sizeBasis: SizeBasis = .allocated, expireInterval: Int64? = nil,
        lowDiskFree: SizeLimit? = nil, lowDiskAction: LowDiskAction = .warn, lowDiskInterval: Int64 = 30
    ) {
        self.directories = directories
        self.sizeBasis = sizeBasis
        self.expireInterval = expireInterval
        self.lowDiskFree = lowDiskFree
        self.lowDiskAction = lowDiskAction
        self.lowDiskInterval = lowDiskInterval
    }

    /// These settings with every directory's profile applied (`DirectorySettings.resolved()`).
    public func resolved() -> WardenSettings {
        var out = self
        out.directories = directories.map { $0.resolved() }
        return out
    }

    /// The group named `name`.
    func group(named name: String) -> GroupSettings? { groups.first { $0.name == name } }
}
