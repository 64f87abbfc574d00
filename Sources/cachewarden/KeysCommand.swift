import ArgumentParser
import CacheWarden

/// `cachewarden keys --format man|markdown` (hidden): the config key table (`ConfigKey.all`) as the
/// `cachewarden.conf(5)` manual page (`make man`) or as docs/configuration.md's key reference.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Print the config file's keys as a manual page or a Markdown table.",
        shouldDisplay: false
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case man, markdown
    }

    @Option(help: "man or markdown.") var format: Format = .markdown

    func run() {
        switch format {
        case .man: print(ConfigKeyDocs.man(version: CacheWardenVersion.current), terminator: "")
        case .markdown: print(ConfigKeyDocs.markdown())
        }
    }
}
