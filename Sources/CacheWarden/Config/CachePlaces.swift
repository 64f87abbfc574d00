/// The places that are caches by convention, where `RootGuard` accepts a folder without a `CACHEDIR.TAG`:
/// - `/var/cache` (and everything in it) and everything *in* `/tmp`, `/var/tmp` and `/dev/shm` (not those
///   folders themselves: they hold more than caches);
/// - in every home: `~/.cache` (the XDG cache folder), and the cache folders of tools that keep theirs elsewhere:
///   npm's `~/.npm/_cacache`, cargo's `~/.cargo/registry`, Gradle's `~/.gradle/caches`, ccache's `~/.ccache`
///   and pnpm's store `~/.local/share/pnpm/store`;
/// - for this process's own user, where its environment moves them: `$XDG_CACHE_HOME`, and the folders those
///   tools' variables name (`PIP_CACHE_DIR`, `UV_CACHE_DIR`, `GOCACHE`, `CCACHE_DIR`, `SCCACHE_DIR`,
///   `HF_HUB_CACHE`, `$HF_HOME/hub`, `$npm_config_cache/_cacache`, `YARN_CACHE_FOLDER`, `npm_config_store_dir`,
///   `$CARGO_HOME/registry`, `$GRADLE_USER_HOME/caches`, `$XDG_DATA_HOME/pnpm/store`).
///
/// Places are spelled, never resolved here: what a symlink at a home's `~/.cache` points to is its owner's to
/// say, and `RootGuard` decides when that counts. `cachewarden discover` finds each tool's cache inside one of
/// these (a test keeps its table and this one together), so every cache it proposes is accepted.
package struct CachePlaces: Sendable {
    /// A place: its path, and what it is, for messages ("~/.cache of user alice").
    package struct Place: Sendable, Equatable {
        package var path: String
        package var what: String
        /// Whether the place itself may be a root (`/tmp` may not: only what is in it).
        package var itself: Bool
        /// Named by an environment variable (trusted only where it names no protected folder).
        package var fromVariable = false

        package init(path: String, what: String, itself: Bool, fromVariable: Bool = false) {
            self.path = path
            self.what = what
            self.itself = itself
            self.fromVariable = fromVariable
        }

        func holds(_ p: String) -> Bool { PathResolver.isWithin(p, path) && (itself || p != path) }
    }

    package let places: [Place]

    /// System-wide places.
    static let system: [Place] = [
        Place(path: "/var/cache", what: "the system's cache folder", itself: true),
        Place(path: "/tmp", what: "a temporary folder", itself: false),
        Place(path: "/var/tmp", what: "a temporary folder", itself: false),
        Place(path: "/dev/shm", what: "a shared-memory folder", itself: false),
    ]

    /// A home's cache folders, relative to it.
    static let inHome = [
        ".cache", ".npm/_cacache", ".cargo/registry", ".gradle/caches", ".ccache", ".local/share/pnpm/store",
    ]

    /// The variables that move a tool's cache, each with what is added to its value.
    static let variables: [(name: String, suffix: String)] = [
        ("XDG_CACHE_HOME", ""), ("PIP_CACHE_DIR", ""), ("UV_CACHE_DIR", ""), ("GOCACHE", ""), ("CCACHE_DIR", ""),
        ("SCCACHE_DIR", ""), ("HF_HUB_CACHE", ""), ("HUGGINGFACE_HUB_CACHE", ""), ("HF_HOME", "hub"),
        ("npm_config_cache", "_cacache"), ("NPM_CONFIG_CACHE", "_cacache"), ("YARN_CACHE_FOLDER", ""),
        ("npm_config_store_dir", ""), ("CARGO_HOME", "registry"), ("GRADLE_USER_HOME", "caches"),
        ("XDG_DATA_HOME", "pnpm/store"),
    ]

    package init(places: [Place]) {
        self.places = places
    }

    /// The places of `homes` and, from `environment` (this process's, for its own user), the variables'.
    package init(homes: [UserHomes.Home], environment: DefaultLocations) {
        var places = Self.system
        for home in homes { places += Self.places(ofHome: home.path, owner: home.owner) }
        for (name, suffix) in Self.variables {
            guard let value = environment.variable(name), value.hasPrefix("/") else { continue }
            let path = PathResolver.absolute(suffix, relativeTo: PathResolver.absolute(value, relativeTo: "/"))
            places.append(
                Place(
                    path: path, what: suffix.isEmpty ? "$\(name)" : "$\(name)/\(suffix)", itself: true,
                    fromVariable: true))
        }
        self.init(places: places)
    }

    /// The cache folders of the home at `home`, whose it is as a phrase ("of user alice").
    static func places(ofHome home: String, owner: String) -> [Place] {
        let home = PathResolver.absolute(home, relativeTo: "/")
        return inHome.map {
            Place(path: PathResolver.absolute($0, relativeTo: home), what: "~/\($0) \(owner)", itself: true)
        }
    }

    /// The place `path` (absolute and normalized) lies in, if any; for a path inside a home (`home`: the forms
    /// of its path), only a place inside that home counts.
    package func place(of path: String, inside home: Set<String>? = nil) -> Place? {
        places.first { p in p.holds(path) && (home?.contains { PathResolver.isWithin(p.path, $0) } ?? true) }
    }

    /// Whether `path` lies in `/var/cache`, the system place whose homes are service accounts' caches (`man`'s
    /// `/var/cache/man`), not homes to protect.
    static func isInSystemCache(_ path: String) -> Bool { PathResolver.isWithin(path, "/var/cache") }
}
