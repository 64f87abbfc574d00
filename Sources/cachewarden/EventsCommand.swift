import CacheWarden
import CacheWardenCommandLine
import CacheWardenService
import Glibc

/// `cachewarden events [--filter trim,evict]`: print the running daemon's live event lines, a second consumer of
/// the stream without a second watcher.
struct EventsCommand: CLICommand {
    static let spec = CommandSpec(
        "events",
        abstract: "Print the running daemon's live event lines (JSON lines), optionally only some events.",
        discussion:
            "Ends with status 0 when the daemon stops; 1 when the daemon disconnected it for reading too slowly (more than 8 MiB behind).",
        options: ClientOptions.options + [
            .value("filter", "names", help: "Only these events, comma-separated (e.g. trim,evict); default all.")
        ]
    )

    var client: ClientOptions
    var events: [String]

    init(_ arguments: ParsedArguments) throws {
        client = ClientOptions(arguments)
        events =
            arguments.value("filter").map {
                $0.split(separator: ",").map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
            } ?? []
        if let first = events.first(where: { !WardenEvent.names.contains($0) }) {
            throw arguments.usageError(
                "unknown event `\(first)` in --filter; expected some of \(WardenEvent.names.sorted().joined(separator: ", "))"
            )
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let client = try client.require(for: "events")
        try client.subscribe(events)
        while let line = try client.readLine(wait: true) {
            // Event lines start with `{"event":`; only the daemon's note on ending a subscription starts with "ok".
            if line.starts(with: Array(#"{"ok":false"#.utf8)), let note = try? JSONValue(parsing: line) {
                throw ControlClientError(
                    "the daemon ended the subscription: \(note["error"]?.string ?? "no reason given")")
            }
            var out = line
            out.append(UInt8(ascii: "\n"))
            guard StandardStreams.write(out, to: .standardOutput) else {
                return // our reader went away (a closed pipe): nothing more to print
            }
        }
    }
}
