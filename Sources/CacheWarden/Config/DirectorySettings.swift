/// Settings of one registered directory. Every `dir.<name>.*` key of the config file has a property here.
///
/// A `profile` fills in the settings that fit a known cache client's layout (protected files, age order, idle
/// deferral); a setting you give yourself — a config key, an init argument other than its default, or a property
/// you assign — overrides the profile's. `resolved()` is what a watcher enforces, and what `cachewarden check`
/// prints.
public struct DirectorySettings: Sendable {
    /// The name used in events (`"dir"`) and in the config keys (`dir.<name>.…`).
    public var name: String
    /// The directory to watch. Relative paths are resolved against the current directory (the config loader
    /// resolves them against the config file's folder).
    public var path: String
    /// Size limit in bytes; crossing it (`trimAt`) trims oldest-first down to `trimTo`. 0 means no quota.
    public var quota: Int64
    /// Files whose age key is older than this many seconds are expired. `nil` is `manual`: only `clear` removes.
    public var maxAge: Int64?
    /// The age key used for expiry and the oldest-first trim.
    public var order: AgeOrder { didSet { explicit.insert(.order) } }
    /// Globs (relative to the root; `*` within a segment, `**` across) never deleted by any policy.
    public var protect: [String] { didSet { explicit.insert(.protect) } }
    /// Globs neither counted nor deleted.
    public var exclude: [String]
    /// Do not descend into other filesystems (mount points) under the root.
    public var oneFileSystem: Bool
    /// `clear` also removes subdirectories it emptied (never the root).
    public var pruneDirs: Bool
    /// Free-space threshold for this directory's filesystem, overriding the global one.
    public var lowDiskFree: SizeLimit?
    /// The high watermark of a low-disk purge of this directory's filesystem, overriding the global one.
    public var lowDiskTarget: SizeLimit?
    /// Create the directory (and its parents) when it is missing, when a watcher in enforce mode starts
    /// (`dir.<name>.create`; reports never create anything).
    public var createIfMissing: Bool = false
    /// Accept a path that `RootGuard` refuses as no cache (a system folder, a home, a folder holding a home),
    /// with a warning at start-up (`allow_any_path`). The filesystem root and a folder holding CacheWarden's
    /// own files stay refused.
    public var allowAnyPath: Bool = false
    /// Where `path` was set, when it came from a config file: errors found later (at start-up) name it.
    var origin: (file: String, line: Int)?
    /// Count directories' own blocks toward the total, so that it equals `du -s` (`count_directories`).
    public var countDirectories: Bool = false
    /// The total a quota trim brings the directory down to: a share of the quota or a size (`trim_to`, 50 %).
    public var trimTo: SizeLimit = .percent(50)
    /// The high watermark: a quota trim starts when the total goes above this (`trim_at`, 100 % of the quota).
    public var trimAt: SizeLimit = .percent(100)
    /// An inode quota: more files than this trims oldest-first to `trimTo` of it (`max_files`).
    public var maxFiles: Int?
    /// A quota trim waits until the directory has seen no activity (writes, and opens where they are watched)
    /// for this many seconds, unless the total crosses `hardQuota` (`trim_after_idle`; nil: trim at once).
    public var trimAfterIdle: Int64? { didSet { explicit.insert(.trimAfterIdle) } }
    /// With `trimAfterIdle`: above this, trim at once anyway (`hard_quota`; default 200 % of the quota).
    public var hardQuota: SizeLimit? { didSet { explicit.insert(.hardQuota) } }
    /// Files open for reading or writing are not victims while others remain (`spare_open`).
    public var spareOpen: Bool = true { didSet { explicit.insert(.spareOpen) } }
    /// Files younger than this many seconds are never victims of quota, `max_files`, group or low-disk trims
    /// (`min_age`).
    public var minAge: Int64? { didSet { explicit.insert(.minAge) } }
    /// What a trim deletes at a time: files, or the root's children (with everything in them) at some depth.
    public var evictUnit: EvictionUnit = .file { didSet { explicit.insert(.evictUnit) } }
    /// With `evictUnit`: the folders (globs relative to the root, each with everything below it) that hold pointers
    /// into units: a unit goes with the symlinks there that lead into it, and the files beside each that carry the
    /// link's name and an extension (`evict_pointers`; empty: off; see `TrimRun+Pointers`).
    public var evictPointers: [String] = [] { didSet { explicit.insert(.evictPointers) } }
    /// With `evictPointers`: the extensions of the files named after a link that are its client's record of it
    /// (set by a profile; uv: `rev`, `http`, `msgpack`, `whl`). Empty: every `<link>.<ext>` is one, and a protected
    /// one keeps its unit.
    public var pointerExtensions: [String] = []
    /// The cache client this directory belongs to (`profile`): it sets what that client needs.
    public var profile: CacheProfile = .generic
    /// The shared budget this directory belongs to (`group`), if any.
    public var group: String?
    /// This directory's weight in its group's fair shares (`weight`, default 1).
    public var weight: Int = 1
    /// Age expiry and low-disk passes unlink at most this many files a second (`delete_rate`; nil: unlimited).
    /// Quota trims stay immediate.
    public var deleteRate: Int?
    /// Which backend follows this directory (`backend`; nil: the global `backend`).
    public var backend: BackendChoice?
    /// Seconds between polling passes when this directory is polled (`poll_interval`; nil: the global one).
    public var pollInterval: Int64?
    /// The locks the cache's own client takes on it (`client_lock`), taken before a trim deletes anything here: a
    /// trim waits while the client holds one. Nil: the profile's (none for `generic`); empty (`none`): no lock.
    public var clientLock: ClientLocks? { didSet { explicit.insert(.clientLock) } }
    /// Called on the watcher's queue before a file is evicted; return `false` to keep it (the trim goes on with
    /// the next oldest file). With `evictUnit`, it is asked for the unit, then (`evictPointers`) for each of its
    /// pointers' files and links: one refused keeps the unit. Keep it fast: it runs on the event path.
    public var shouldEvict: (@Sendable (EvictionCandidate) -> Bool)?

    /// The settings a profile may fill in, and which of them were given explicitly.
    enum ProfileKey: String, CaseIterable, Sendable {
        case order, protect, trimAfterIdle, hardQuota, spareOpen, minAge, evictUnit, clientLock, evictPointers
    }
    var explicit = Set<ProfileKey>()

    /// A directory to watch with `quota` bytes (0: none); other settings take their defaults.
    public init(
        name: String, path: String, quota: Int64 = 0, maxAge: Int64? = nil, order: AgeOrder = .mtime,
        protect: [String] = [], exclude: [String] = [], oneFileSystem: Bool = true, pruneDirs: Bool = false,
        lowDiskFree: SizeLimit? = nil, profile: CacheProfile = .generic,
        shouldEvict: (@Sendable (EvictionCandidate) -> Bool)? = nil
    ) {
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
        self.profile = profile
        self.shouldEvict = shouldEvict
        if order != .mtime { explicit.insert(.order) }
        if !protect.isEmpty { explicit.insert(.protect) }
    }

    /// These settings with the profile's filled in where none was given explicitly: what a watcher enforces.
    public func resolved() -> DirectorySettings {
        var out = self
        let defaults = profile.defaults
        if !explicit.contains(.order), let v = defaults.order { out.order = v }
        if !explicit.contains(.protect) { out.protect = defaults.protect }
        if !explicit.contains(.trimAfterIdle), let v = defaults.trimAfterIdle { out.trimAfterIdle = v }
        if !explicit.contains(.minAge), let v = defaults.minAge { out.minAge = v }
        if !explicit.contains(.evictUnit), let v = defaults.evictUnit { out.evictUnit = v }
        if !explicit.contains(.clientLock), let v = profile.clientLock { out.clientLock = v }
        if !explicit.contains(.evictPointers), let v = defaults.evictPointers { out.evictPointers = v }
        if out.pointerExtensions.isEmpty, let v = defaults.pointerExtensions { out.pointerExtensions = v }
        if out.trimAfterIdle != nil && !explicit.contains(.hardQuota) && out.hardQuota == nil {
            out.hardQuota = .percent(200)
        }
        out.explicit = explicit
        return out
    }

    /// The config keys whose values `resolved()` takes from the profile (none were given explicitly).
    public var keysFromProfile: [String] {
        let d = profile.defaults
        var keys: [String] = []
        if !explicit.contains(.order) && d.order != nil { keys.append("order") }
        if !explicit.contains(.protect) && !d.protect.isEmpty { keys.append("protect") }
        if !explicit.contains(.trimAfterIdle) && d.trimAfterIdle != nil { keys.append("trim_after_idle") }
        if !explicit.contains(.minAge) && d.minAge != nil { keys.append("min_age") }
        if !explicit.contains(.evictUnit) && d.evictUnit != nil { keys.append("evict_unit") }
        if !explicit.contains(.clientLock) && profile.clientLock != nil { keys.append("client_lock") }
        if !explicit.contains(.evictPointers) && d.evictPointers != nil { keys.append("evict_pointers") }
        return keys
    }

    /// The total above which a quota trim starts (0: no quota).
    var trimAtBytes: Int64 { quota > 0 ? trimAt.bytes(of: quota) : 0 }
    /// The total a quota trim aims for.
    var trimToBytes: Int64 { trimTo.bytes(of: quota) }
}
