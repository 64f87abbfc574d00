import CacheWarden
import CacheWardenCommandLine
import CacheWardenService

/// The options of a command that only talks to a running daemon (`trim`, `reload`, `events`): where its socket is,
/// given directly or through the config file.
struct ClientOptions {
    static let options: [OptionSpec] =
        DaemonOptions.options + [
            .value(
                "config", short: "c", "file", help: "The config file, read only for its control_socket.",
                completion: .file)
        ]

    var daemon: DaemonOptions
    var config: String?

    init(_ arguments: ParsedArguments) {
        daemon = DaemonOptions(arguments)
        config = arguments.value("config")
    }

    /// A connection to the daemon, or the one-line error naming `command` and where nobody answered. Without
    /// --config and --control-socket, the default config file (when there is one) is read for its control_socket.
    func require(for command: String) throws -> ControlClient {
        try daemon.require(
            config: config ?? (daemon.controlSocket == nil ? DefaultConfig.existingFile() : nil), for: command)
    }
}
