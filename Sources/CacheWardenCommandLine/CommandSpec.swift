/// A command as its help, manual page and completions describe it, and as the parser reads it: a root with
/// subcommands, or a leaf with options and positional arguments.
package struct CommandSpec: Sendable {
    package var name: String
    /// One line: what the command does.
    package var abstract: String
    /// More text for the help and the manual (one paragraph; may be empty).
    package var discussion: String
    package var options: [OptionSpec]
    package var arguments: [ArgumentSpec]
    package var subcommands: [CommandSpec]
    /// Left out of the parent's help and the completions (still runs).
    package var hidden: Bool
    /// `--version` prints this (the root's only).
    package var version: String?

    package init(
        _ name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
        arguments: [ArgumentSpec] = [], subcommands: [CommandSpec] = [], hidden: Bool = false, version: String? = nil
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.hidden = hidden
        self.version = version
    }

    /// The option named `--long`, `-h/--help` included.
    func option(long: String) -> OptionSpec? {
        long == "help" ? Self.help : options.first { $0.long == long }
    }

    func option(short: Character) -> OptionSpec? {
        short == "h" ? Self.help : options.first { $0.short == short }
    }

    func subcommand(_ name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// What every command understands.
    static let help = OptionSpec.flag("help", short: "h", help: "Show help information.")

    /// The root's own options besides `--help`.
    static let versionOption = OptionSpec.flag("version", help: "Show the version.")
    static let completionOption = OptionSpec.value(
        "generate-completion-script", "shell",
        help: "Print the completion script for bash, zsh or fish.",
        completion: .values(CompletionScript.Shell.allCases.map(\.rawValue)))

    /// The options the help and the manual list, in order.
    var listedOptions: [OptionSpec] {
        var all = options
        if version != nil { all.append(Self.versionOption) }
        all.append(Self.help)
        return all
    }

    var listedSubcommands: [CommandSpec] { subcommands.filter { !$0.hidden } }
}
