import ArgumentParser
import CacheWarden
import CacheWardenService

/// `cachewarden trim NAME [--to SIZE]`: ask the running daemon to trim one directory now.
struct TrimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trim",
        abstract: "Ask the running daemon to trim a directory oldest-first now, and print the trim's JSON line.",
        discussion: "Needs a daemon (`cachewarden run`) answering on its control socket: the trim works on the daemon's in-memory ledger. Without --to, the directory's own trim_to target (it needs a quota)."
    )

    @OptionGroup var client: ClientOptions

    @Option(name: .long, help: ArgumentHelp("The total to trim down to, e.g. 500MB (default: the directory's trim_to).", valueName: "size"))
    var to: String?

    @Argument(help: ArgumentHelp("The directory's registered name.", valueName: "name"))
    var name: String

    func validate() throws {
        if let to, WardenSettings.parseSize(to) == nil {
            throw ValidationError("bad value `\(to)` for --to: expected a size like 500MB or 2GiB")
        }
    }

    func run() throws {
        let client = try client.require(for: "trim")
        let trim = try client.trim(name, to: to)
        print(JSONValue.object(trim).jsonText)
    }
}
