import CacheWarden
import CacheWardenCommandLine
import CacheWardenService

/// Where the daemon's control socket is: `--control-socket`, else the config file's `control_socket`, else
/// `DefaultLocations`: systemd's `$RUNTIME_DIRECTORY/cachewarden.sock`; for a user's instance (non-root, default
/// config) `$XDG_RUNTIME_DIR/cachewarden/cachewarden.sock`; else none. A client tries the same, and then
/// `/run/cachewarden/cachewarden.sock`, where the shipped system unit puts it.
struct DaemonOptions {
    static let options: [OptionSpec] = [
        .value(
            "control-socket", "path",
            help:
                "The daemon's control socket (default: the config's control_socket, else $RUNTIME_DIRECTORY/cachewarden.sock, else for a user $XDG_RUNTIME_DIR/cachewarden/cachewarden.sock; clients then try /run/cachewarden/cachewarden.sock).",
            completion: .file)
    ]

    var controlSocket: String?

    init(_ arguments: ParsedArguments) {
        controlSocket = arguments.value("control-socket")
    }

    /// The socket `cachewarden run` listens on, or nil for none; `userInstance`: the config came from the default
    /// lookup.
    func daemonPath(_ settings: WardenSettings, userInstance: Bool, locations: DefaultLocations = .current) -> String? {
        if let controlSocket { return Self.absolute(controlSocket) }
        if let configured = settings.controlSocket { return configured }
        return locations.daemonSocket(userInstance: userInstance)
    }

    /// The settings `run` watches with, and `check` validates: `source`'s (the default config file when it names
    /// none), with `controlSocket` the socket the daemon listens on (`daemonPath`, nil for none), which must fit a
    /// socket address and which no registered root may hold. One function for both commands, so that what `check`
    /// accepts `run` runs. Returns the source read too (its `config` is the file to reload).
    func settings(from given: SettingsOptions) throws -> (WardenSettings, source: SettingsOptions) {
        let source = given.withDefaultConfig()
        var settings = try source.load(checkingLockFiles: true)
        guard let socket = daemonPath(settings, userInstance: given.usesDefaultConfig), socket != settings.controlSocket
        else {
            return (settings, source)
        }
        if let problem = WardenSettings.controlSocketProblem(socket) {
            throw CLIUsageError(message: (controlSocket == nil ? "control socket " : "--control-socket: ") + problem)
        }
        settings.controlSocket = socket
        try settings.validate()
        return (settings, source)
    }

    /// The sockets a client tries, in order (the config file, when given, is read only for its `control_socket`).
    func clientPaths(config: String?, locations: DefaultLocations = .current) throws -> [String] {
        if let controlSocket { return [Self.absolute(controlSocket)] }
        if let config, let configured = try WardenSettings.load(configFile: config).controlSocket {
            return [configured]
        }
        return locations.clientSockets
    }

    /// A connection to the first of `paths` that answers, or nil.
    /// - Throws: `ControlClientError` (exit 1, naming the path) at the first socket this user may not connect to:
    ///   a daemon is there, and "no daemon answers" would send the user looking for the wrong problem.
    static func firstAnswering(_ paths: [String]) throws(ControlClientError) -> ControlClient? {
        for path in paths {
            if let client = try ControlClient(path: path) { return client }
        }
        return nil
    }

    /// A connection to the daemon, or nil when nobody answers.
    func connect(config: String?) throws -> ControlClient? {
        try Self.firstAnswering(try clientPaths(config: config))
    }

    /// A connection to the daemon, or the one-line error of a command that needs one.
    func require(config: String?, for command: String) throws -> ControlClient {
        let paths = try clientPaths(config: config)
        guard let client = try Self.firstAnswering(paths) else {
            throw DaemonUnavailable(
                message:
                    "no daemon answers on \(paths.joined(separator: " or ")): `cachewarden \(command)` needs a running `cachewarden run` with a control socket (give --control-socket or --config)"
            )
        }
        return client
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("@") ? path : PathResolver.absolute(path, relativeTo: PathResolver.currentDirectory())
    }
}

/// A command that needs the daemon found none (exit 1: a run-time condition, not bad input).
struct DaemonUnavailable: Error {
    var message: String
}
