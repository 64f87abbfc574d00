/// How a file's size is counted.
public enum SizeBasis: String, Sendable, CaseIterable {
    /// Disk blocks actually used (`st_blocks × 512`), what `du` shows. The default.
    case allocated
    /// The file's length in bytes (`st_size`), what `ls -l` and `du --apparent-size` show.
    case apparent
}

/// Which timestamp makes a file "old", for the oldest-first trim and for age expiry.
public enum AgeOrder: String, Sendable, CaseIterable {
    /// Last modification time (the default, as in SDWebImage's disk cache).
    case mtime
    /// Last access time (unreliable on `noatime`/`relatime` mounts).
    case atime
    /// Last status change time.
    case ctime
    /// Birth time from `statx`; falls back to `mtime` where the filesystem has none.
    case btime
    /// The last `IN_OPEN` the watcher saw (true least-recently-used, recorded in memory); `mtime` until opened.
    case opened
}

/// What a low-disk crossing does besides the `low_disk` line.
public enum LowDiskAction: String, Sendable, CaseIterable {
    /// Only emit the `low_disk` line.
    case warn
    /// Also trim the directories on that filesystem oldest-first until free space is back above the threshold.
    case trim
}

/// A free-space threshold: a fraction of the filesystem's size or an absolute byte count.
public enum FreeSpaceThreshold: Sendable, Equatable {
    /// A percentage of the filesystem size (`10%` is `.percent(10)`).
    case percent(Double)
    /// An absolute number of free bytes.
    case bytes(Int64)

    /// The threshold in bytes for a filesystem of `size` bytes.
    public func bytes(ofFilesystemSize size: Int64) -> Int64 {
        switch self {
        case .percent(let p): return Int64((Double(size) * p / 100).rounded(.up))
        case .bytes(let b): return b
        }
    }
}

/// A file the trimmer is about to delete, as shown to a directory's veto hook.
public struct EvictionCandidate: Sendable {
    /// The registered directory's name.
    public let directory: String
    /// The path relative to the registered directory (invalid UTF-8 replaced by U+FFFD).
    public let file: String
    /// The file's counted size in bytes.
    public let size: Int64
    /// Why it is being removed.
    public let reason: TrimReason
}

/// Settings of one registered directory. Every `dir.<name>.*` key of the config file has a property here.
public struct DirectorySettings: Sendable {
    /// The name used in events (`"dir"`) and in the config keys (`dir.<name>.…`).
    public var name: String
    /// The directory to watch. Relative paths are resolved against the current directory (the config loader
    /// resolves them against the config file's folder).
    public var path: String
    /// Size limit in bytes; crossing it trims oldest-first to half of it. 0 means no quota.
    public var quota: Int64
    /// Files whose age key is older than this many seconds are expired. `nil` is `manual`: only `clear` removes.
    public var maxAge: Int64?
    /// The age key used for expiry and the oldest-first trim.
    public var order: AgeOrder
    /// Globs (relative to the root; `*` within a segment, `**` across) never deleted by any policy.
    public var protect: [String]
    /// Globs neither counted nor deleted.
    public var exclude: [String]
    /// Do not descend into other filesystems (mount points) under the root.
    public var oneFileSystem: Bool
    /// `clear` also removes subdirectories it emptied (never the root).
    public var pruneDirs: Bool
    /// Free-space threshold for this directory's filesystem, overriding the global one.
    public var lowDiskFree: FreeSpaceThreshold?
    /// Create the directory (and its parents) when it is missing, when a watcher in enforce mode starts
    /// (`dir.<name>.create`; reports never create anything).
    public var createIfMissing: Bool = false
    /// Count directories' own blocks toward the total, so that it equals `du -s` (`dir.<name>.count_directories`).
    public var countDirectories: Bool = false
    /// Called on the watcher's queue before a file is evicted; return `false` to keep it (the trim goes on with
    /// the next oldest file). Keep it fast: it runs on the event path.
    public var shouldEvict: (@Sendable (EvictionCandidate) -> Bool)?

    /// A directory to watch with `quota` bytes (0: none); other settings take their defaults.
    public init(name: String, path: String, quota: Int64 = 0, maxAge: Int64? = nil, order: AgeOrder = .mtime,
                protect: [String] = [], exclude: [String] = [], oneFileSystem: Bool = true, pruneDirs: Bool = false,
                lowDiskFree: FreeSpaceThreshold? = nil,
                shouldEvict: (@Sendable (EvictionCandidate) -> Bool)? = nil) {
        self.name = name
        self.path = path
        self.quota = quota
        self.maxAge = maxAge
        self.order = order
        self.protect = protect
        self.exclude = exclude
        self.oneFileSystem = oneFileSystem
        self.pruneDirs = pruneDirs
        self.lowDiskFree = lowDiskFree
        self.shouldEvict = shouldEvict
    }
}

/// Settings of the whole watcher: what the `key = value` config file holds, buildable in code.
public struct WardenSettings: Sendable {
    /// How file sizes are counted in every directory.
    public var sizeBasis: SizeBasis
    /// The registered directories, in config order.
    public var directories: [DirectorySettings]
    /// Seconds between age-expiry passes; `nil` derives it from each directory's `maxAge` (a tenth, 1 s…1 h).
    public var expireInterval: Int64?
    /// Free-space threshold for every registered directory's filesystem; `nil` disables low-disk checks.
    public var lowDiskFree: FreeSpaceThreshold?
    /// What a low-disk crossing does.
    public var lowDiskAction: LowDiskAction
    /// Seconds between timer-driven free-space checks (writes also trigger rate-limited checks).
    public var lowDiskInterval: Int64
    /// Seconds between re-reads of directories that could not be watched because the inotify watch limit
    /// (`fs.inotify.max_user_watches`) was reached; each re-read also retries the watch.
    public var watchLimitRescanInterval: Int64 = 10

    /// Settings for `directories`; other settings take their defaults.
    public init(directories: [DirectorySettings] = [], sizeBasis: SizeBasis = .allocated, expireInterval: Int64? = nil,
                lowDiskFree: FreeSpaceThreshold? = nil, lowDiskAction: LowDiskAction = .warn, lowDiskInterval: Int64 = 30) {
        self.directories = directories
        self.sizeBasis = sizeBasis
        self.expireInterval = expireInterval
        self.lowDiskFree = lowDiskFree
        self.lowDiskAction = lowDiskAction
        self.lowDiskInterval = lowDiskInterval
    }
}
