import CacheWarden
import CacheWardenCommandLine
import CacheWardenService

/// `cachewarden trim NAME [--to SIZE]`: ask the running daemon to trim one directory now.
struct TrimCommand: CLICommand {
    static let spec = CommandSpec(
        "trim",
        abstract: "Ask the running daemon to trim a directory oldest-first now, and print the trim's JSON line.",
        discussion:
            "Needs a daemon (`cachewarden run`) answering on its control socket: the trim works on the daemon's in-memory ledger. Without --to, the directory's own trim_to target (it needs a quota). While the cache's own client holds its lock (client_lock), nothing is deleted and the command waits, saying so once on stderr: up to the daemon's client_lock_wait, --timeout SECONDS, or not at all with --no-wait (exit 1 naming the holder).",
        options: ClientOptions.options + [
            .value("to", "size", help: "The total to trim down to, e.g. 500MB (default: the directory's trim_to).")
        ] + LockWait.options,
        arguments: [ArgumentSpec("name", help: "The directory's registered name.")]
    )

    var client: ClientOptions
    var to: String?
    var name: String
    var wait: LockWait

    init(_ arguments: ParsedArguments) throws {
        client = ClientOptions(arguments)
        to = arguments.value("to")
        name = arguments.argument("name") ?? ""
        wait = try LockWait(arguments)
        if let to, WardenSettings.parseSize(to) == nil {
            throw arguments.usageError("bad value `\(to)` for --to: expected a size like 500MB or 2GiB")
        }
    }

    func run() throws {
        let client = try client.require(for: "trim")
        let trim = try wait.run("trim \(name)", { try client.trim(name, to: to) }, busy: LockWait.daemonBusy)
        print(JSONValue.object(trim).jsonText)
    }
}
