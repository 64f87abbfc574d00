import CacheWarden
import Glibc

/// The command line's side of the default config file, which `DefaultLocations` finds (root's
/// /etc/cachewarden/cachewarden.conf, a user's ~/.config/cachewarden/cachewarden.conf): a command given neither
/// --config nor --dir uses it, says so on stderr, and fails with one line naming it when it is missing.
enum DefaultConfig {
    /// The default config file when it exists, announced on stderr (`cachewarden: using FILE`); nil otherwise.
    static func existingFile(_ locations: DefaultLocations = .current) -> String? {
        guard let file = locations.configFile, access(file, F_OK) == 0 else { return nil }
        say("using \(file)")
        return file
    }

    /// The error of a command that needs a config and has none: where it looked (and, for `status`, which
    /// sockets did not answer), and how to make one.
    static func missing(_ locations: DefaultLocations = .current, noDaemonAt: String? = nil) -> CLIUsageError {
        let daemon = noDaemonAt.map { "no daemon answers on \($0), and " } ?? ""
        guard let file = locations.configFile else {
            return CLIUsageError(
                message:
                    "\(daemon)no default config file: $HOME is not set and user \(locations.euid) has no home directory; give --config FILE or --dir PATH"
            )
        }
        return CLIUsageError(
            message:
                "\(daemon)no config file at \(file); write one with `cachewarden discover --write \(file)` or by hand, or give --config FILE or --dir PATH"
        )
    }

    /// Creates the folder of a user's socket (`$XDG_RUNTIME_DIR/cachewarden`, mode 0700) when `socket` is that
    /// socket; under systemd the unit's `RuntimeDirectory=` has made it already. A failure shows when listening.
    static func prepareFolder(of socket: String?, _ locations: DefaultLocations = .current) {
        guard let socket, socket == locations.userSocket, let slash = socket.lastIndex(of: "/") else { return }
        _ = mkdir(String(socket[..<slash]), 0o700)
    }

    static func say(_ message: String) {
        let line = Array("cachewarden: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}

extension SettingsOptions {
    /// Whether these options leave the config file to the default lookup (neither --config nor --dir).
    var usesDefaultConfig: Bool { config == nil && dir == nil }

    /// These options with `config` set to the default file when they leave it to the default lookup and the file
    /// exists (announced on stderr). Without it, `load()` fails with `DefaultConfig.missing()`.
    func withDefaultConfig(_ locations: DefaultLocations = .current) -> SettingsOptions {
        guard usesDefaultConfig, let file = DefaultConfig.existingFile(locations) else { return self }
        var copy = self
        copy.config = file
        return copy
    }

    /// `path` written so that the config parser reads it as it is (--dir is never expanded: the shell did that):
    /// each `$` doubled, a leading `~` behind `./`.
    static func literal(_ path: String) -> String {
        let escaped = PathExpansion.escapingDollars(path)
        return escaped.hasPrefix("~") ? "./" + escaped : escaped
    }
}
