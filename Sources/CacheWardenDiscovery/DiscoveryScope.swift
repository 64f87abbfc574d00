/// What `discover` looks through: one home, the system's caches or both, which of the found caches it keeps,
/// and how far and how long it searches for `CACHEDIR.TAG` folders.
package struct DiscoveryScope: Sendable {
    /// The home to search and the variables that apply to it; nil searches no home.
    package var home: CacheLocations?
    /// Keep only caches inside the home (after symlinks are resolved): for another user's home, searched as root,
    /// whose links and `.bazelrc` must not lead a root service to folders outside it.
    package var confineToHome = false
    /// Also the system's caches: nginx's cache folders, and `CACHEDIR.TAG` folders under `systemRoot`.
    package var system: Bool = false
    /// Keep only caches whose name or path matches one of these globs (none: keep all).
    package var include: [String] = []
    /// Drop caches whose name or path matches one of these globs.
    package var exclude: [String] = []
    /// Levels below the home (or `systemRoot`) searched for `CACHEDIR.TAG`; 0 turns the search off.
    package var tagDepth: Int = 5
    /// Time the whole `CACHEDIR.TAG` search may take.
    package var tagTimeLimit: Duration = .seconds(10)
    /// nginx's main configuration file.
    package var nginxConfig: String = "/etc/nginx/nginx.conf"
    /// Where system caches live.
    package var systemRoot: String = "/var/cache"
    /// The config file the proposal goes to (`--write`): no cache proposed may hold it.
    package var configFile: String?

    package init(home: CacheLocations?) { self.home = home }
}
