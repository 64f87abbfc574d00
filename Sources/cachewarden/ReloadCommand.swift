import ArgumentParser
import CacheWarden

/// `cachewarden reload`: ask the running daemon to re-read its config file (what SIGHUP does); what systemd's
/// `ExecReload=` runs.
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Ask the running daemon to re-read its config file; a bad file is reported and the running settings stay.",
        discussion: "Exit 0 when the daemon applied the new settings; 2 with the daemon's error (file and line) when it kept the old ones; 1 when no daemon answers."
    )

    @OptionGroup var client: ClientOptions

    func run() throws {
        try client.require(for: "reload").reload()
    }
}
