import FoundationEssentials

/// Why files were removed.
public enum TrimReason: String, Sendable {
    /// The directory crossed its quota.
    case quota
    /// Files passed the directory's `max_age`.
    case age
    /// Free space on the filesystem fell below the low-disk threshold.
    case lowDisk = "low_disk"
    /// A `trim(_:to:)` call from the library.
    case manual
    /// A `clear`.
    case clear
    /// The directory crossed its `max_files`.
    case maxFiles = "max_files"
    /// The directory's group crossed its shared quota.
    case groupQuota = "group_quota"
    /// (On an `evict`:) one file alone was larger than the trim's target, so it went first and alone.
    case oversize
}

/// Candidates a trim left in place, by why (reported when it fell short of its target).
public struct SparedFiles: Sendable, Equatable {
    /// Matched a `protect` glob (or is a `CACHEDIR.TAG`).
    public var protected = 0
    /// Open for reading or writing (`spare_open`), or being written.
    public var inUse = 0
    /// Younger than `min_age`.
    public var young = 0
    /// Kept by the veto hook.
    public var vetoed = 0

    public init(protected: Int = 0, inUse: Int = 0, young: Int = 0, vetoed: Int = 0) {
        self.protected = protected
        self.inUse = inUse
        self.young = young
        self.vetoed = vetoed
    }

    public var isEmpty: Bool { protected + inUse + young + vetoed == 0 }
}

/// A directory's running totals from the in-memory ledger.
public struct DirectoryTotals: Sendable, Equatable {
    /// The registered name.
    public var dir: String
    /// The absolute path of the registered root.
    public var path: String
    /// Bytes counted (per the size basis; hard links once).
    public var total: Int64
    /// Regular files counted (hard links once).
    public var files: Int
    /// The quota in bytes (0: none).
    public var quota: Int64

    public init(dir: String, path: String, total: Int64, files: Int, quota: Int64) {
        self.dir = dir
        self.path = path
        self.total = total
        self.files = files
        self.quota = quota
    }
}

/// A file was written and closed, or moved in.
public struct FileWritten: Sendable, Equatable {
    /// The registered directory's name.
    public var dir: String
    /// Path relative to the registered root (invalid UTF-8 replaced by U+FFFD).
    public var file: String
    /// The file's counted size.
    public var size: Int64
    /// The directory's total after this write.
    public var total: Int64
    /// Regular files counted (hard links once).
    public var files: Int
    /// The directory's quota in bytes (0: none).
    public var quota: Int64
}

/// One file removed by a policy.
public struct Eviction: Sendable, Equatable {
    /// The registered directory's name.
    public var dir: String
    /// Path relative to the registered directory (invalid UTF-8 replaced by U+FFFD).
    public var file: String
    /// The file's counted size in bytes.
    public var size: Int64
    /// Why files were removed.
    public var reason: TrimReason
    /// `true` when nothing was deleted because the watcher runs with `dryRun`.
    public var dryRun: Bool
    /// Files the evicted unit held (`evict_unit = entry | depth:N`); nil for a single file (or a unit's pointer).
    public var files: Int?
    /// The symlinks into the unit that went with it, just before it (`evict_pointers`; each, and each file named
    /// after one, had its own line, `size` 0 for a link); nil when none did.
    public var pointers: Int?

    public init(
        dir: String, file: String, size: Int64, reason: TrimReason, dryRun: Bool, files: Int? = nil,
        pointers: Int? = nil
    ) {
        self.dir = dir
        self.file = file
        self.size = size
        self.reason = reason
        self.dryRun = dryRun
        self.files = files
        self.pointers = pointers
    }
}

/// The outcome of one trim of one directory.
public struct TrimReport: Sendable, Equatable {
    /// The registered directory's name.
    public var dir: String
    /// Why files were removed.
    public var reason: TrimReason
    /// Files removed.
    public var removed: Int
    /// Bytes freed (`totalBefore - total`).
    public var freed: Int64
    /// The total before the trim.
    public var totalBefore: Int64
    /// The total in bytes (per the size basis; hard links once).
    public var total: Int64
    /// The directory's quota in bytes (0: none).
    public var quota: Int64
    /// The total the trim aimed for.
    public var target: Int64
    /// How long the trim took.
    public var durationMilliseconds: Double
    /// Bytes still above `target` when only protected, vetoed or undeletable files were left (0 otherwise).
    public var shortBy: Int64
    /// `true` when nothing was deleted because the watcher runs with `dryRun`.
    public var dryRun: Bool
    /// Seconds the trim waited for the directory to be idle (`trim_after_idle`); nil when it did not wait.
    public var deferredSeconds: Double? = nil
    /// The group whose shared quota this trim served.
    public var group: String? = nil
    /// With `short_by`: the candidates it left, by why.
    public var spared: SparedFiles? = nil
    /// The pass stopped at its `delete_rate` budget; another follows.
    public var paced = false
    /// The trim waited, deleting nothing: a file larger than its target was still being finished (written, or
    /// under a protected temporary name written in the last 2 s). It runs again when that file changes, or 2 s
    /// later.
    public var held = false
    /// For a `max_files` trim: the file count it aimed for, and how many files above it remained.
    public var targetFiles: Int? = nil
    public var filesShortBy: Int? = nil
    /// For a low-disk trim: the free space, in bytes, below which the purge started (`low_disk_free`) and the one
    /// it goes on to (`low_disk_target`, at least a tenth above the first).
    public var lowWatermark: Int64? = nil
    public var highWatermark: Int64? = nil
    /// For a member of a group or low-disk trim that was asked to give and gave nothing: why.
    public var skipped: MemberSkip? = nil
}

/// The watcher re-read a tree because the running total could not be trusted (after a queue overflow).
public struct RescanReport: Sendable, Equatable {
    /// The registered directory's name.
    public var dir: String
    /// Running total minus the freshly scanned total.
    public var drift: Int64
    /// The total in bytes (per the size basis; hard links once).
    public var total: Int64
    /// Regular files counted (hard links once).
    public var files: Int
}

/// Free space on a filesystem fell below its threshold.
public struct LowDiskReport: Sendable, Equatable {
    /// The mount point.
    public var mount: String
    /// Free bytes for unprivileged users (`f_bavail × f_frsize`).
    public var free: Int64
    /// The filesystem size.
    public var size: Int64
    /// The threshold in bytes that free space fell below.
    public var threshold: Int64
    /// Registered directories on that filesystem.
    public var dirs: [String]
    /// Fill rate estimated from recent checks, bytes per second (positive: filling).
    public var bytesPerSecond: Double?
    /// Seconds until full at that rate.
    public var secondsToFull: Double?
}

/// The phases of a manual clear, in order (as in mPaaS's cleaner).
public enum ClearPhase: String, Sendable {
    case preCalculating = "pre_calculating"
    case cleaning
    case postCalculating = "post_calculating"
    case done
}

/// Progress of a manual clear.
public struct ClearProgress: Sendable, Equatable {
    /// The phase this report is about.
    public var phase: ClearPhase
    /// 0…1 within the clear.
    public var progress: Double
    /// Bytes freed so far (final at `.done`).
    public var freed: Int64
    /// Files removed so far (final at `.done`).
    public var removed: Int
    /// The directories being cleared.
    public var dirs: [String]
    /// `true` when nothing was deleted because the watcher runs with `dryRun`.
    public var dryRun: Bool
}

/// Something went wrong at run time; the watcher goes on.
public struct WardenIssue: Sendable, Equatable {
    /// What went wrong.
    public var message: String
    /// The registered directory's name, when known.
    public var dir: String?
    /// Path relative to the registered directory, when known.
    public var file: String?
    /// A short machine-readable kind (`root_lost`, `watch_limit`, `permission`, …).
    public var kind: String?

    /// An issue described by `message`, about `dir`/`file` where known.
    public init(message: String, dir: String? = nil, file: String? = nil, kind: String? = nil) {
        self.message = message
        self.dir = dir
        self.file = file
        self.kind = kind
    }
}

/// One event from the watcher, mirroring the JSON-lines contract. `jsonLine()` gives the exact line the CLI prints.
public struct WardenEvent: Sendable, Equatable {
    /// When the event happened.
    public var time: Date
    /// What happened.
    public var kind: Kind

    /// The event kinds; each maps to one `"event"` value in JSON. The large reports of rare kinds are boxed
    /// (`indirect`), so an event is as small as the frequent ones (`write`, `evict`): a trim of n files holds n
    /// `evict` events until they reach the sinks, and a `TrimReport` inline made each one several times larger.
    public enum Kind: Sendable, Equatable {
        /// `ready`: the initial scan of a directory finished.
        case ready(DirectoryTotals)
        /// `write`: a file was closed after writing, or moved in.
        case write(FileWritten)
        /// `evict`: a file was deleted by a policy.
        case evict(Eviction)
        /// `trim`: a trim finished.
        indirect case trim(TrimReport)
        /// `status`: totals on request (SIGUSR1 in the CLI).
        case status(DirectoryTotals)
        /// `stop`: final totals when the watcher stops.
        case stop(DirectoryTotals)
        /// `overflow`: the kernel's inotify queue overflowed; a rescan follows.
        case overflow
        /// `rescan`: a directory was re-read (after an overflow), with the drift found.
        indirect case rescan(RescanReport)
        /// `low_disk`: free space fell below the threshold.
        indirect case lowDisk(LowDiskReport)
        /// `clear`: a phase of a manual clear.
        indirect case clear(ClearProgress)
        /// `dropped`: the sink dropped this many lines because its reader was too slow.
        case dropped(count: Int)
        /// `error`: something failed; the watcher goes on.
        indirect case error(WardenIssue)
        /// `deferred`: a trim waits for its cache's client to release its lock (one line per trim).
        indirect case deferred(DeferredTrim)
    }

    /// An event of `kind` at `time` (now by default).
    public init(_ kind: Kind, time: Date = Date()) {
        self.time = time
        self.kind = kind
    }

    /// Every `"event"` name there is.
    public static let names: Set<String> = [
        "ready", "write", "evict", "trim", "status", "stop", "overflow", "rescan",
        "low_disk", "clear", "dropped", "error", "deferred",
    ]

    /// The event's `"event"` name in JSON.
    public var name: String {
        switch kind {
        case .ready: "ready"
        case .write: "write"
        case .evict: "evict"
        case .trim: "trim"
        case .status: "status"
        case .stop: "stop"
        case .overflow: "overflow"
        case .rescan: "rescan"
        case .lowDisk: "low_disk"
        case .clear: "clear"
        case .dropped: "dropped"
        case .error: "error"
        case .deferred: "deferred"
        }
    }
}
