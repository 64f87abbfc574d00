/// Presets for the caches people have: what each client keeps in its cache folder that must never go, the age
/// order that matches how it marks use, whether trims should wait for it to be idle, and what it needs deleted
/// whole. Each was worked out by running the client with `inotifywait` beside it and deleting behind its back
/// (Debian's ccache 4.7, Go 1.19, pip 23, nginx 1.22, sccache 0.4, cargo 1.95 and npm 10 against local registries;
/// uv 0.13 and huggingface_hub 2.4 from PyPI, the hub stood in for by a local server); Bazel's from its
/// documentation and source. An explicit key overrides the profile's value.
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
    /// uv (`UV_CACHE_DIR`, `uv cache dir`): keeps `CACHEDIR.TAG`, `.gitignore`, its lock (`.lock`: every uv
    /// process holds it shared), the per-entry locks (`*.lock`) and its temporary files and folders (`.tmp*`).
    /// An unpacked wheel (`archive-v0/<id>/`) is deleted whole (`evict_unit = depth:2`): with one file gone uv still
    /// links the rest into a venv and reports success, and the import fails later; with the folder gone it is a
    /// clean miss. An archive goes with its pointers, pointers first (`evict_pointers = wheels-v*, sdists-v*,
    /// environments-v*`: only those folders are listed for links): the symlinks into it from `wheels-v8/`,
    /// `sdists-v11/` and `environments-v2/` and the `.rev`, `.http`, `.msgpack` and built `.whl` files named after
    /// each (its pointer files; the `.lock` stays, and a protected pointer file keeps its archive). uv 0.13.9 follows a
    /// `.rev` pointer (a wheel from a `--find-links` folder or a local path, and `uv run --with` from such a folder)
    /// without looking: an archive deleted under it failed 9 of 24 installs in a loop (`failed to read directory
    /// archive-v0/<id>`); with the pointer gone too each way is a clean miss (0 of 24, every file of every RECORD
    /// there). uv touches nothing on a hit, so ages come from opens (a hit reads the pointer, which ages its archive);
    /// a trim during an install fails it, so trims wait for a minute of quiet.
    case uv
    /// sccache's local disk cache (`SCCACHE_DIR`): a hit sets the entry's mtime, and a deleted entry is a clean miss.
    /// But sccache before 0.10 panics on its next own eviction of a file deleted under its running server, and its
    /// cache stays broken until the server restarts (mozilla/sccache#2092); the server stops after 10 idle minutes,
    /// so trims wait 11 (`trim_after_idle = 11m`; lower it for a fixed sccache). Keeps temporary files
    /// (`.sccachetmp*`).
    case sccache
    /// npm's content-addressed cache (`<cache>/_cacache`): keeps `tmp/**` (downloads being renamed into place). A
    /// deleted content or index file is a clean miss (re-fetched, or `ENOTCACHED` offline); npm touches nothing on
    /// a hit, so ages come from opens.
    case npm
    /// The Hugging Face hub cache (`HF_HUB_CACHE`, `~/.cache/huggingface/hub`): each repository folder
    /// (`models--org--name`) is deleted whole (`evict_unit = entry`): a missing blob or snapshot link makes the
    /// library treat the whole repository as corrupt, and an offline load can return a dangling link. Keeps the
    /// locks, downloads in progress (`*.incomplete`), its probes and temporary refs, and the shared blob store
    /// (`blobs/`, where huggingface_hub 2 keeps Xet files once for all repositories). Ages come from opens (a hit
    /// opens the ref and the blob); a deletion during a download fails it, so trims wait two quiet minutes. With
    /// repositories taken whole, huggingface_hub 2.4 reads each complete or misses it cleanly: online it downloads
    /// it again, offline it raises `LocalEntryNotFoundError` (a dangling snapshot link does too); 8 reads in a
    /// loop with 4 trims between them: 0 wrong bytes, 0 other errors, 36 clean offline misses.
    case huggingface
    /// cargo's registry (`CARGO_HOME/registry`): each extracted crate (`src/<index>/<crate>-<version>/`) is
    /// deleted whole (`evict_unit = depth:3`): cargo trusts an extracted folder once it holds `.cargo-ok`, so one
    /// missing file breaks every later build, while a missing folder is extracted again from its `.crate`, offline
    /// too. Keeps `CACHEDIR.TAG`, `index/**` (without it every `--offline` build fails) and the downloaded `.crate`
    /// files (`cache/**`): cargo 1.95 needs a crate's `.crate` for an offline build even with its folder extracted
    /// ("attempting to make an HTTP request, but --offline was specified"); never opened after the extraction, they
    /// were the oldest files, and a trim that took them failed 3 of 5 offline builds in a loop (0 of 5 since). So
    /// a trim takes extracted folders only, and the quota must leave room for the index and the `.crate` files
    /// (a fifth to a third of a registry). Extracted files keep the crate's own old mtime, so ages come from opens;
    /// rustc fails when a crate folder goes while it compiles, so trims wait for a minute of quiet.
    case cargo

    /// What a profile sets.
    struct Defaults {
        var protect: [String] = []
        var order: AgeOrder?
        var trimAfterIdle: Int64?
        var minAge: Int64?
        var evictUnit: EvictionUnit?
        var evictPointers: [String]?
        var pointerExtensions: [String]?
    }

    var defaults: Defaults {
        switch self {
        case .generic: Defaults()
        case .ccache: Defaults(protect: ["ccache.conf", "stats", "*.tmp.*"], order: .mtime)
        case .go:
            Defaults(protect: ["README", "trim.txt", "testexpire.txt", "fuzz/**"], order: .opened, trimAfterIdle: 60)
        case .pip: Defaults(protect: ["*.tmp", "selfcheck/**"], order: .opened)
        case .nginx: Defaults(protect: ["*.??????????"], order: .opened)
        case .bazel: Defaults(protect: ["tmp/**", "gc/**"], order: .mtime, trimAfterIdle: 300)
        case .uv:
            Defaults(
                protect: [
                    "/CACHEDIR.TAG", "/.gitignore", "/.lock", "/.tmp*/**", "**/.tmp*", "**/.tmp*/**",
                    "*.lock", "*/.git", "*/.gitignore",
                ],
                order: .opened, trimAfterIdle: 60, evictUnit: .depth(2),
                evictPointers: ["wheels-v*", "sdists-v*", "environments-v*"],
                pointerExtensions: ["rev", "http", "msgpack", "whl"])
        case .sccache: Defaults(protect: ["**/.sccachetmp*"], order: .mtime, trimAfterIdle: 660)
        case .npm: Defaults(protect: ["tmp/**"], order: .opened)
        case .huggingface:
            Defaults(
                protect: [
                    "/CACHEDIR.TAG", ".locks/**", "*.incomplete", "*/blobs/tmp_*", "*/tmp*/**",
                    "*/refs/**/*.tmp", "*/refs/*.tmp", "blobs/**",
                ],
                order: .opened, trimAfterIdle: 120, evictUnit: .entry)
        case .cargo:
            Defaults(
                protect: ["/CACHEDIR.TAG", "index/**", "cache/**"], order: .opened, trimAfterIdle: 60,
                evictUnit: .depth(3))
        }
    }
}
