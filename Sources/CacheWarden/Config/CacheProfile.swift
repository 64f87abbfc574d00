/// Presets for the caches people have: what each client keeps in its cache folder that must never go, the age
/// order that matches how it marks use, and whether trims should wait for it to be idle. Each was worked out by
/// running the client (Debian's ccache 4.7, Go 1.19, pip 23, nginx 1.22) with `inotifywait` beside it; Bazel's from
/// its documentation and source. An explicit key overrides the profile's value.
public enum CacheProfile: String, Sendable, CaseIterable {
    /// No presets.
    case generic
    /// ccache (`CCACHE_DIR`): keeps `ccache.conf` (its settings: without it ccache falls back to its defaults,
    /// 5 GB and `hard_link` off) and every `stats` file (`x/stats`, `x/y/stats`: its size and hit counters, which
    /// `ccache -s` sums), and its temporary files (`*.tmp.*`, renamed into place when complete). ccache refreshes
    /// an entry's mtime on every hit, so mtime order is least-recently-used.
    case ccache
    /// The Go build cache (`GOCACHE`): keeps `README`, `trim.txt` (Go's own trim clock), `testexpire.txt` (what
    /// `go clean -testcache` set) and `fuzz/**` (corpora, never trimmed by Go). Go decides a cache hit and opens
    /// the output later, and refreshes an entry's mtime only once an hour: a trim in the middle of a build breaks
    /// it (`could not import …: no such file or directory`). So trims wait until the cache has been idle for a
    /// minute (`trim_after_idle = 1m`), and ages come from opens (`order = opened`).
    case go
    /// pip (`PIP_CACHE_DIR`): keeps its temporary files (`*.tmp`, renamed into place) and `selfcheck/**`. pip
    /// never touches an entry on a hit, so ages come from opens (`order = opened`).
    case pip
    /// nginx `proxy_cache_path`: keeps temporary files written in the cache (`use_temp_path=off`: `<md5>.` and
    /// ten digits). nginx keeps its LRU in shared memory and never touches a file on a hit, so ages come from opens
    /// (`order = opened`). (nginx deletes any file it does not know in its cache: CacheWarden adds none.)
    case nginx
    /// Bazel's `--disk_cache`: keeps `tmp/**` (uploads in progress) and `gc/**` (its garbage collector's lock).
    /// Bazel refreshes mtimes on every hit; its own GC waits five idle minutes, and so does this profile.
    case bazel

    /// What a profile sets.
    struct Defaults {
        var protect: [String] = []
        var order: AgeOrder?
        var trimAfterIdle: Int64?
        var minAge: Int64?
        var evictUnit: EvictionUnit?
    }

    var defaults: Defaults {
        switch self {
        case .generic: Defaults()
        case .ccache: Defaults(protect: ["ccache.conf", "stats", "*.tmp.*"], order: .mtime)
        case .go: Defaults(protect: ["README", "trim.txt", "testexpire.txt", "fuzz/**"], order: .opened, trimAfterIdle: 60)
        case .pip: Defaults(protect: ["*.tmp", "selfcheck/**"], order: .opened)
        case .nginx: Defaults(protect: ["*.??????????"], order: .opened)
        case .bazel: Defaults(protect: ["tmp/**", "gc/**"], order: .mtime, trimAfterIdle: 300)
        }
    }
}
