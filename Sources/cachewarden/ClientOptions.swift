import ArgumentParser
import CacheWarden
import CacheWardenService

/// The options of a command that only talks to a running daemon (`trim`, `reload`, `events`): where its socket is,
/// given directly or through the config file.
struct ClientOptions: ParsableArguments {
    @OptionGroup var daemon: DaemonOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("The config file, read only for its control_socket.", valueName: "file"))
    var config: String?

    /// A connection to the daemon, or the one-line error naming `command` and where nobody answered. Without
    /// --config and --control-socket, the default config file (when there is one) is read for its control_socket.
    func require(for command: String) throws -> ControlClient {
        try daemon.require(config: config ?? (daemon.controlSocket == nil ? DefaultConfig.existingFile() : nil), for: command)
    }
}
