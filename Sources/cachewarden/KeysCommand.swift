import CacheWarden
import CacheWardenCommandLine

/// `cachewarden keys --format man|markdown` (hidden): the config key table (`ConfigKey.all`) as the
/// `cachewarden.conf(5)` manual page (`make man`) or as docs/configuration.md's key reference.
struct KeysCommand: CLICommand {
    static let spec = CommandSpec(
        "keys",
        abstract: "Print the config file's keys as a manual page or a Markdown table.",
        options: [
            .value(
                "format", "format", help: "man or markdown (the default).", completion: .values(["man", "markdown"]))
        ],
        hidden: true
    )

    var format: String

    init(_ arguments: ParsedArguments) throws {
        format = try arguments.choice("format", of: ["man", "markdown"]) ?? "markdown"
    }

    func run() {
        switch format {
        case "man": print(ConfigKeyDocs.man(version: CacheWardenVersion.current), terminator: "")
        default: print(ConfigKeyDocs.markdown())
        }
    }
}
