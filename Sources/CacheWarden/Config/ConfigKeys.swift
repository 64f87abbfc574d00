/// The one table of config keys: the parser's set of known keys (and its unknown-key errors), `check`'s key names,
/// the `cachewarden.conf(5)` manual page and docs/configuration.md's key reference all come from `ConfigKey.all`.
/// `ConfigKeyTableTests` fails when the parser, the docs and the README disagree with it.
public struct ConfigKey: Sendable, Equatable {
    public enum Scope: String, Sendable, CaseIterable {
        /// `field` is the whole key: `size_basis`.
        case global
        /// `dir.<name>.<field>`.
        case directory
        /// `group.<name>.<field>`.
        case group
    }

    public var scope: Scope
    /// The last part of the key (`quota` in `dir.<name>.quota`).
    public var field: String
    /// The value's syntax, e.g. `size` or `allocated|apparent`.
    public var value: String
    public var defaultValue: String
    /// One line; Markdown backticks allowed (the man page drops them).
    public var summary: String

    /// The key as written in a file, with `<name>` / `<g>` for a directory or group name.
    public var name: String {
        switch scope {
        case .global: field
        case .directory: "dir.<name>.\(field)"
        case .group: "group.<g>.\(field)"
        }
    }

    public static func keys(_ scope: Scope) -> [ConfigKey] { all.filter { $0.scope == scope } }

    /// The fields of a scope, sorted (what unknown-key errors list).
    public static func fields(_ scope: Scope) -> [String] { keys(scope).map(\.field).sorted() }

    public static func isKnown(_ field: String, in scope: Scope) -> Bool {
        all.contains { $0.scope == scope && $0.field == field }
    }

    private static func g(_ f: String, _ v: String, _ d: String, _ s: String) -> ConfigKey {
        ConfigKey(scope: .global, field: f, value: v, defaultValue: d, summary: s)
    }

    private static func d(_ f: String, _ v: String, _ dv: String, _ s: String) -> ConfigKey {
        ConfigKey(scope: .directory, field: f, value: v, defaultValue: dv, summary: s)
    }

    public static let all: [ConfigKey] = [
        g(
            "size_basis", "`allocated`\\|`apparent`", "`allocated`",
            "`allocated`: disk blocks (`st_blocks × 512`, what `du` shows); `apparent`: bytes (`st_size`)"),
        g(
            "expire_interval", "interval", "derived",
            "time between age-expiry passes; default a tenth of the shortest `max_age`, between 1 s and 1 h"),
        g(
            "low_disk_free", "share or size", "off",
            "warn when a registered directory's filesystem has less free space than this: a share of the filesystem (above 0 and below 100 %) or a size"
        ),
        g(
            "low_disk_target", "share or size", "`low_disk_free`",
            "the high watermark: a low-disk purge goes on until this much is free (at least `low_disk_free`; see Low disk)"
        ),
        g(
            "low_disk_action", "`warn`\\|`trim`", "`warn`",
            "`warn`, or `trim`: also purge oldest-first until free space is back at `low_disk_target` (see Low disk)"),
        g(
            "low_disk_interval", "interval", "`30s`",
            "timer between free-space checks (writes also trigger checks, at most once a second)"),
        g(
            "control_socket", "path", "`$RUNTIME_DIRECTORY/cachewarden.sock` under systemd, else none",
            "the Unix socket `run` answers requests on (see service.md)"),
        g(
            "control_socket_mode", "octal mode", "`0600`",
            "the socket file's mode; the owner must be able to read and write, at most `0666`; with group bits (`0660`) the socket takes its folder's group"
        ),
        g(
            "metrics_file", "path ending in `.prom`", "none",
            "a Prometheus text file for node_exporter's textfile collector (see service.md)"),
        g(
            "metrics_interval", "interval", "`15s`",
            "how often the metrics file is rewritten when nothing changes (after changes: within a second)"),
        g(
            "backend", "`auto`\\|`inotify`\\|`fanotify`\\|`poll`", "`auto`",
            "how changes are followed: `inotify`, `fanotify` (one mark per filesystem; needs CAP_SYS_ADMIN and Linux 5.9), `poll` (re-read changed directories every `poll_interval`), or `auto`: inotify, but polling for a directory on NFS, CIFS/SMB, FUSE, 9p, Ceph, AFS and other network filesystems, and fanotify (else polling) for directories past the inotify watch limit (see Backends)"
        ),
        g(
            "poll_interval", "interval", "`30s`",
            "time between polling passes over a polled directory; each directory is also re-read every 10th pass"),
        g(
            "events_to", "`stdout`\\|`journal`\\|`both`", "`stdout`",
            "where `run` sends events: JSON lines on stdout, records with fields to journald's native socket (`CACHEWARDEN_EVENT=trim`, …), or both (see service.md, Journal); read at start"
        ),
        g(
            "client_lock_wait", "interval", "`1h`",
            "how long a trim may wait for a client's lock (`dir.<name>.client_lock`) before one `error` line (`\"kind\":\"client_lock_wait\"`) and an alert say so; the trim goes on waiting: a client's lock is never broken"
        ),
        d(
            "path", "path", "required",
            "the directory to watch; it must exist and be a directory unless `create = true`"),
        d(
            "create", "boolean", "`false`",
            "create the directory (and its parents) when `run` (or a library watcher in enforce mode) starts and it is missing, with a `CACHEDIR.TAG` in it (a folder to be created is accepted wherever it is not protected: see Which folders may be registered); reports and dry runs never create it"
        ),
        d(
            "quota", "size", "`0`",
            "size limit; a total above `trim_at` of it trims oldest-first to `trim_to`. `0` = no quota"),
        d(
            "trim_to", "share or size", "`50%`",
            "what a quota trim brings the total down to: a share of the quota (above 0, at most 100 %) or a size"),
        d(
            "trim_at", "share or size", "`100%`",
            "the high watermark: a trim starts when the total goes above this share of the quota (or size); `90%` keeps a steady writer from ever crossing the quota itself"
        ),
        d(
            "trim_after_idle", "interval", "off",
            "a quota trim waits until the directory has had no activity (writes; opens too, where watched) for this long (`30s`, `5m`); so does the directory's turn in a group trim or a low-disk purge"
        ),
        d(
            "hard_quota", "share or size", "`200%` with `trim_after_idle`",
            "above this (a share of the quota from 100 % to 10,000 %, or a size) a deferred trim happens at once"),
        d(
            "max_files", "number", "off",
            "an inode quota (a positive number): more files than this trims oldest-first to `trim_to` of it (half when `trim_to` is a size); `\"reason\":\"max_files\"`"
        ),
        d(
            "max_age", "`manual` or age", "`manual`",
            "purgeable type: files older than this are expired (see Purgeable types)"),
        d(
            "min_age", "age", "off",
            "files younger than this (`10m`, `1d`) are never victims of quota, `max_files`, group or low-disk trims"),
        d(
            "order", "`mtime`\\|`atime`\\|`ctime`\\|`btime`\\|`opened`", "`mtime`",
            "age key for expiry and trims (see Order keys)"),
        d(
            "protect", "globs", "—",
            "comma-separated globs never deleted by any policy (still counted, shown by `status`)"),
        d("exclude", "globs", "—", "comma-separated globs neither counted nor deleted (e.g. `URLCACHE/**`)"),
        d(
            "spare_open", "boolean", "`true`",
            "files open for reading or writing are not victims while other candidates remain (opens are counted from `IN_OPEN`/`IN_CLOSE_*` while watched; a file opened before start-up is not known to be open)"
        ),
        d(
            "evict_unit", "`file`\\|`entry`\\|`depth:N`", "`file`",
            "`file`, `entry` (each child of the root, with everything in it, is one unit), or `depth:N` with N from 1 to 64 (the children at depth N); a unit leaves its client's view in one rename"
        ),
        d(
            "evict_pointers", "globs\\|`false`", "`false`",
            "with `evict_unit`: the folders that hold pointers into units (globs relative to the directory, each with everything below it, e.g. `wheels-v*`); a unit goes with its pointers, first — each symlink there that leads into it, and the files beside the link named after it with an extension (`<link>.rev`); the unit's age is the newest of them, and anything among them that cannot be checked or is protected, excluded or vetoed keeps the unit (see Profiles: uv)"
        ),
        d(
            "profile", CacheProfile.allCases.map { "`\($0.rawValue)`" }.joined(separator: "\\|"), "`generic`",
            "the client's own files protected and its defaults (see Profiles); an explicit key overrides the profile's"),
        d(
            "client_lock", "lock files, or `none`", "the profile's, else none",
            "the lock files the cache's own client takes, comma-separated, relative to the root (`../NAME`: a file directly beside it; `{unit}`: per unit; `*` patterns), each with a kind, `flock` (default) or `ofd`; a trim takes them all without blocking and waits while the client holds one (see Client locks)"
        ),
        d("group", "group name", "—", "the shared budget (`group.<g>.quota`) this directory belongs to"),
        d("weight", "number", "`1`", "this directory's weight in its group's fair shares (1 to 1,000,000)"),
        d(
            "delete_rate", "rate", "unlimited",
            "age-expiry and low-disk passes unlink at most this many files a second (`500/s` or `500`); quota trims stay immediate"
        ),
        d(
            "count_directories", "boolean", "`false`",
            "count directories' own blocks too, so that the total equals `du -s`"),
        d(
            "allow_any_path", "boolean", "`false`",
            "accept a folder that nothing says is a cache, or a protected one (a system folder, a home or a folder holding one), with a warning; a cache place or a valid `CACHEDIR.TAG` needs no key (see Which folders may be registered)"
        ),
        d(
            "one_file_system", "boolean", "`true`",
            "do not descend into other mounts under the root, bind mounts of a folder of the same filesystem included; with `false`, those are counted, but a trim never deletes across a mount either way"
        ),
        d("prune_dirs", "boolean", "`false`", "`clear` also removes subdirectories it emptied (never the root)"),
        d("low_disk_free", "share or size", "global", "per-directory free-space threshold, overriding `low_disk_free`"),
        d(
            "low_disk_target", "share or size", "global, else the directory's `low_disk_free`",
            "per-directory high watermark of the low-disk purge, overriding `low_disk_target`"),
        d(
            "backend", "`auto`\\|`inotify`\\|`fanotify`\\|`poll`", "global",
            "this directory's backend, overriding `backend`"),
        d("poll_interval", "interval", "global", "this directory's polling interval, overriding `poll_interval`"),
        ConfigKey(
            scope: .group, field: "quota", value: "size", defaultValue: "required for a group",
            summary: "the budget the group's members share (a size above 0)"),
        ConfigKey(
            scope: .group, field: "trim_to", value: "share or size", defaultValue: "`50%`",
            summary: "what a group trim brings the members' sum down to: a share of the group quota or a size"),
    ]
}
