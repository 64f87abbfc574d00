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

    /// Whether a write to a file always moves the age a stat gives under this order, so that a status unchanged in
    /// every field means no write since: mtime and ctime do, and so does `opened`, whose stat gives the mtime (open
    /// times are the ledger's) — to the filesystem's timestamp granularity: a clock tick, or finer once a stat has
    /// seen the timestamp, on filesystems with multigrain timestamps (ext4, XFS, btrfs, tmpfs; Linux 6.13).
    var movesOnWrite: Bool { self != .atime && self != .btime }
}

/// What a low-disk crossing does besides the `low_disk` line.
public enum LowDiskAction: String, Sendable, CaseIterable {
    /// Only emit the `low_disk` line.
    case warn
    /// Also trim the directories on that filesystem oldest-first until free space is back above the threshold.
    case trim
}

/// A size given outright, or as a share of another size (a quota, a filesystem): `trim_to = 50%`,
/// `hard_quota = 200%`, `low_disk_free = 10%`, or `trim_to = 400MB`.
public enum SizeLimit: Sendable, Equatable {
    /// A percentage of the reference size (`10%` is `.percent(10)`).
    case percent(Double)
    /// An absolute number of bytes.
    case bytes(Int64)

    /// The limit in bytes for a reference size of `size` bytes; a share past `Int64.max` (`hard_quota = 200%` of
    /// the largest quota) is `Int64.max`.
    public func bytes(of size: Int64) -> Int64 {
        switch self {
        case .percent(let p):
            let bytes = (Double(size) * p / 100).rounded(.up)
            return bytes < 0x1p63 ? Int64(bytes) : .max
        case .bytes(let b): return b
        }
    }

    /// The limit in bytes for a filesystem of `size` bytes (the low-disk threshold).
    public func bytes(ofFilesystemSize size: Int64) -> Int64 { bytes(of: size) }

    /// As the config file writes it (`50%`, `400000000B`).
    public var configText: String {
        switch self {
        case .percent(let p): return p == p.rounded() ? "\(Int(p))%" : "\(p)%"
        case .bytes(let b): return "\(b)B"
        }
    }
}

/// A free-space threshold: a share of the filesystem's size or an absolute byte count.
public typealias FreeSpaceThreshold = SizeLimit

/// What a trim deletes at a time.
public enum EvictionUnit: Sendable, Equatable {
    /// Each file on its own (the default).
    case file
    /// Each child of the root at this depth (1: the root's own children), with everything in it: its age is the
    /// newest age inside, its size the sum, and it is deleted whole.
    case depth(Int)

    /// `entry`: the root's own children.
    public static let entry = EvictionUnit.depth(1)

    /// As the config file writes it.
    public var configText: String {
        switch self {
        case .file: "file"
        case .depth(1): "entry"
        case .depth(let n): "depth:\(n)"
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

/// Where `cachewarden run` sends its events (`events_to`).
public enum EventsDestination: String, Sendable, CaseIterable {
    /// JSON lines on stdout (which systemd's units connect to the journal as plain text). The default.
    case stdout
    /// Records with fields (`CACHEWARDEN_EVENT=`, …) to journald's native socket; nothing on stdout.
    case journal
    /// Both.
    case both

    public var toStdout: Bool { self != .journal }
    public var toJournal: Bool { self != .stdout }
}

/// Which backend follows a directory's changes (`backend`).
public enum BackendChoice: String, Sendable, CaseIterable {
    /// inotify, except on a filesystem inotify cannot watch faithfully (network, FUSE: see `BackendSelection`),
    /// which is polled; directories past the inotify watch limit go to fanotify where it is available, else are
    /// polled. The default.
    case auto
    /// inotify: the kernel reports each change as it happens (local filesystems).
    case inotify
    /// fanotify: one mark per filesystem, no per-directory watch and no watch limit (`CAP_SYS_ADMIN`, Linux 5.9).
    case fanotify
    /// Re-read changed directories every `poll_interval` (any filesystem; costs a `lstat` per directory a pass).
    case poll
}
