import CacheWarden
import CacheWardenCommandLine

/// `cachewarden reload`: ask the running daemon to re-read its config file (what SIGHUP does); what systemd's
/// `ExecReload=` runs.
struct ReloadCommand: CLICommand {
    static let spec = CommandSpec(
        "reload",
        abstract:
            "Ask the running daemon to re-read its config file; a bad file is reported and the running settings stay.",
        discussion:
            "Exit 0 when the daemon applied the new settings; 2 with the daemon's error (file and line) when it kept the old ones; 1 when no daemon answers.",
        options: ClientOptions.options
    )

    var client: ClientOptions

    init(_ arguments: ParsedArguments) {
        client = ClientOptions(arguments)
    }

    func run() throws {
        try client.require(for: "reload").reload()
    }
}
