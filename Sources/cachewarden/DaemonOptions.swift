import ArgumentParser
import CacheWarden
import Foundation

/// Where the daemon's control socket is: `--control-socket`, else the config file's `control_socket`, else
/// systemd's `$RUNTIME_DIRECTORY/cachewarden.sock` (the daemon listens there only under systemd; a client also
/// tries `/run/cachewarden/cachewarden.sock`, where the shipped unit puts it).
struct DaemonOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The daemon's control socket (default: the config's control_socket, else $RUNTIME_DIRECTORY/cachewarden.sock, else /run/cachewarden/cachewarden.sock for clients).", valueName: "path"))
    var controlSocket: String?

    /// The socket `cachewarden run` listens on, or nil for none.
    func daemonPath(_ settings: WardenSettings, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let controlSocket { return Self.absolute(controlSocket) }
        if let configured = settings.controlSocket { return configured }
        return environment["RUNTIME_DIRECTORY"] == nil ? nil : ControlClient.defaultPath(environment: environment)
    }

    /// The socket a client talks to (the config file, when given, is read only for its `control_socket`).
    func clientPath(config: String?) throws -> String {
        if let controlSocket { return Self.absolute(controlSocket) }
        if let config, let configured = try WardenSettings.load(configFile: config).controlSocket { return configured }
        return ControlClient.defaultPath()
    }

    /// A connection to the daemon, or nil when nobody answers there.
    func connect(config: String?) throws -> ControlClient? {
        ControlClient(path: try clientPath(config: config))
    }

    /// A connection to the daemon, or the one-line error of a command that needs one.
    func require(config: String?, for command: String) throws -> ControlClient {
        let path = try clientPath(config: config)
        guard let client = ControlClient(path: path) else {
            throw DaemonUnavailable(message: "no daemon answers on \(path): `cachewarden \(command)` needs a running `cachewarden run` with a control socket (give --control-socket or --config)")
        }
        return client
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") || path.hasPrefix("@") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

/// A command that needs the daemon found none (exit 1: a run-time condition, not bad input).
struct DaemonUnavailable: Error {
    var message: String
}
