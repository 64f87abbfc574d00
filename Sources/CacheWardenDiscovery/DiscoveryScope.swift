/// What `discover` looks through: one home, the system's caches or both, which of the found caches it keeps,
/// and how far and how long it searches for `CACHEDIR.TAG` folders.
public struct DiscoveryScope: Sendable {
    /// The home to search and the variables that apply to it; nil searches no home.
    public var home: CacheLocations?
    /// Keep only caches inside the home (after symlinks are resolved): for another user's home, searched as root,
    /// whose links and `.bazelrc` must not lead a root service to folders outside it.
    public var confineToHome = false
    /// Also the system's caches: nginx's cache folders, and `CACHEDIR.TAG` folders under `systemRoot`.
    public var system: Bool = false
    /// Keep only caches whose name or path matches one of these globs (none: keep all).
    public var include: [String] = []
    /// Drop caches whose name or path matches one of these globs.
    public var exclude: [String] = []
    /// Levels below the home (or `systemRoot`) searched for `CACHEDIR.TAG`; 0 turns the search off.
    public var tagDepth: Int = 5
    /// Time the whole `CACHEDIR.TAG` search may take.
    public var tagTimeLimit: Duration = .seconds(10)
    /// nginx's main configuration file.
    public var nginxConfig: String = "/etc/nginx/nginx.conf"
    /// Where system caches live.
    public var systemRoot: String = "/var/cache"
    /// The config file the proposal goes to (`--write`): no cache proposed may hold it.
    public var configFile: String?

    public init(home: CacheLocations?) { self.home = home }
}
