import Glibc

/// Where CacheWarden looks when it is told nothing: the config file, the control socket, and the home and XDG base
/// directories that `~` and `$XDG_CACHE_HOME` stand for in a config file.
///
/// Everything comes from an environment and an effective user ID, so a test can ask as root and as a user:
///
/// |                | root (euid 0)                         | any other user                                         |
/// |----------------|---------------------------------------|--------------------------------------------------------|
/// | config file    | `/etc/cachewarden/cachewarden.conf`   | `$XDG_CONFIG_HOME/cachewarden/cachewarden.conf`         |
/// | daemon socket  | `$RUNTIME_DIRECTORY/cachewarden.sock` | the same; else
/// `$XDG_RUNTIME_DIR/cachewarden/cachewarden.sock` |
/// | client sockets | the same; else `/run/cachewarden/cachewarden.sock` | the same; else the user's, then the system's
/// |
public struct DefaultLocations: Sendable {
    /// root's config file.
    public static let systemConfigFile = "/etc/cachewarden/cachewarden.conf"
    /// The XDG base directories and their defaults under the home directory (XDG Base Directory specification).
    static let baseDirectoryDefaults = [
        "XDG_CACHE_HOME": ".cache", "XDG_CONFIG_HOME": ".config",
        "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state",
    ]

    /// The effective user ID the locations are for.
    public let euid: UInt32
    private let lookup: @Sendable (String) -> String?

    /// The locations for a process with `environment` running as `euid`.
    public init(environment: [String: String], euid: UInt32) {
        self.init(euid: euid) { environment[$0] }
    }

    private init(euid: UInt32, lookup: @escaping @Sendable (String) -> String?) {
        self.euid = euid
        self.lookup = lookup
    }

    /// This process's: its environment and effective user ID.
    public static var current: DefaultLocations {
        DefaultLocations(euid: geteuid()) { name in getenv(name).map { String(cString: $0) } }
    }

    /// An environment variable's value.
    public func variable(_ name: String) -> String? { lookup(name) }

    /// `$HOME` when it is an absolute path, else the home directory of `euid` in the user database; nil when
    /// neither gives an absolute path.
    public var home: String? {
        if let home = lookup("HOME"), home.hasPrefix("/") { return home }
        var entry = passwd(), found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(euid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let dir = entry.pw_dir else {
            return nil
        }
        let path = String(cString: dir)
        return path.hasPrefix("/") ? path : nil
    }

    /// An XDG base directory (`XDG_CACHE_HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`): the variable
    /// when it holds an absolute path, else its default under `home` (an unset, empty or relative value is
    /// ignored, as the specification says); nil for another name, or without a home.
    public func baseDirectory(_ name: String) -> String? {
        guard let fallback = Self.baseDirectoryDefaults[name] else { return nil }
        if let value = lookup(name), value.hasPrefix("/") { return value }
        return home.map { ($0.hasSuffix("/") ? $0 : $0 + "/") + fallback }
    }

    /// The default config file: root's `/etc/cachewarden/cachewarden.conf`, a user's
    /// `$XDG_CONFIG_HOME/cachewarden/cachewarden.conf` (`~/.config/…`); nil for a user without a home directory.
    public var configFile: String? {
        euid == 0
            ? Self.systemConfigFile : baseDirectory("XDG_CONFIG_HOME").map { $0 + "/cachewarden/cachewarden.conf" }
    }

    /// The system service's socket: the `RuntimeDirectory=cachewarden` of the unit we ship.
    public static let systemSocket = "/run/cachewarden/cachewarden.sock"

    /// The socket in systemd's `RuntimeDirectory=` (`$RUNTIME_DIRECTORY/cachewarden.sock`; of several
    /// directories, the first), when that is set.
    public var serviceSocket: String? {
        lookup("RUNTIME_DIRECTORY").map {
            ($0.split(separator: ":").first.map(String.init) ?? $0) + "/cachewarden.sock"
        }
    }

    /// A user's socket, `$XDG_RUNTIME_DIR/cachewarden/cachewarden.sock`: nil for root, or when `XDG_RUNTIME_DIR`
    /// is not an absolute path. (The user unit's `RuntimeDirectory=cachewarden` is the same folder.)
    public var userSocket: String? {
        guard euid != 0, let dir = lookup("XDG_RUNTIME_DIR"), dir.hasPrefix("/") else { return nil }
        return (dir.hasSuffix("/") ? dir : dir + "/") + "cachewarden/cachewarden.sock"
    }

    /// Where a daemon listens when neither its flags nor its config name a socket: `serviceSocket` under
    /// systemd; else, for a user's instance (one that found its config by the default lookup), `userSocket`;
    /// else nowhere.
    public func daemonSocket(userInstance: Bool) -> String? {
        serviceSocket ?? (userInstance ? userSocket : nil)
    }

    /// The sockets a client tries, in order, when neither its flags nor its config name one: `serviceSocket`
    /// alone when set; else `userSocket` (a user's), then the system service's `/run/cachewarden/cachewarden.sock`.
    public var clientSockets: [String] {
        if let service = serviceSocket { return [service] }
        return (userSocket.map { [$0] } ?? []) + [Self.systemSocket]
    }
}
