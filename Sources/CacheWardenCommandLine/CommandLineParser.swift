/// Reads a command line against a `CommandSpec` tree.
///
/// Written here rather than taken from swift-argument-parser (which the ecosystem would suggest): that package
/// calls FoundationEssentials' `JSONEncoder` from its parsing code (for `--experimental-dump-help`), which keeps
/// much of FoundationEssentials (calendars, time zones, URL, property lists) in every static binary that uses it:
/// a program with one argument-parser command alone would use most of CacheWarden's size, memory and start-up
/// budgets (docs/performance.md, Footprint). What CacheWarden needs is small: one level of
/// subcommands, long and short options, flags, repeated options, positionals, help, a manual page and
/// completions.
///
/// The option syntax is GNU `getopt_long(3)`'s, and `CommandLineParserReferenceTests` checks it against glibc's
/// `getopt_long` on generated command lines: `--name value`, `--name=value`, `-c value`, `-cvalue`, bundled short
/// flags, `--` ending the options, `-` as a positional, options and positionals in any order (permutation), a
/// value taken as it is even when it starts with `-`. Differences, chosen: a long option must be written in full
/// (`getopt_long` also takes an unambiguous prefix such as `--dry`, which breaks the day a second option shares
/// it); an option that takes one value is an error when given twice (`getopt_long` hands both over and the last
/// usually wins: `--quota 1MB --quota 2MB` is more likely a mistake than a wish); and a word after what the root
/// prints (`--version`, `help NAME`, a completion script) is an error, not ignored.
package struct CommandLineParser: Sendable {
    package let root: CommandSpec

    package init(root: CommandSpec) {
        self.root = root
    }

    /// What the command line asks for.
    package enum Outcome: Sendable {
        /// Run the command `ParsedArguments.commandPath` names.
        case run(ParsedArguments)
        /// Print this (help, the version, a completion script) on stdout and exit 0.
        case print(String)
    }

    /// `arguments` without the program name.
    package func parse(_ arguments: [String]) throws(UsageError) -> Outcome {
        guard !root.subcommands.isEmpty else { return try parseLeaf(root, path: [root.name], arguments[...]) }
        var rest = arguments[...]
        guard let first = rest.popFirst() else {
            throw UsageError(
                "missing command; expected one of \(root.listedSubcommands.map(\.name).joined(separator: ", "))",
                command: root.name)
        }
        switch first {
        case "-h", "--help": return .print(HelpText(root, path: [root.name]).text)
        case "--version" where root.version != nil: return try printing(root.version! + "\n", unless: rest)
        case "help":
            guard let name = rest.popFirst() else { return .print(HelpText(root, path: [root.name]).text) }
            guard let sub = root.subcommand(name) else { throw unknownCommand(name) }
            return try printing(HelpText(sub, path: [root.name, sub.name]).text, unless: rest)
        default: break
        }
        if let shell = try completionRequest(first, &rest) {
            return try printing(CompletionScript(root: root).text(for: shell), unless: rest)
        }
        guard let sub = root.subcommand(first) else {
            if first.hasPrefix("-") { throw UsageError("unknown option \(Self.name(of: first))", command: root.name) }
            throw unknownCommand(first)
        }
        return try parseLeaf(sub, path: [root.name, sub.name], rest)
    }

    /// `text`, when nothing follows what asked for it; the root's help when `-h`/`--help` does (help wins, as
    /// everywhere); else the first stray word is an error.
    private func printing(_ text: String, unless rest: ArraySlice<String>) throws(UsageError) -> Outcome {
        guard let extra = rest.first else { return .print(text) }
        if rest.contains(where: { $0 == "-h" || $0 == "--help" }) {
            return .print(HelpText(root, path: [root.name]).text)
        }
        throw UsageError("unexpected argument `\(extra)`", command: root.name)
    }

    private func unknownCommand(_ name: String) -> UsageError {
        UsageError(
            "unknown command `\(name)`; expected one of \(root.listedSubcommands.map(\.name).joined(separator: ", "))",
            command: root.name)
    }

    /// `--generate-completion-script SHELL` (or `=SHELL`), the root's hidden option.
    private func completionRequest(_ first: String, _ rest: inout ArraySlice<String>) throws(UsageError)
        -> CompletionScript.Shell?
    {
        let long = "--" + CommandSpec.completionOption.long
        let value: String
        if first == long {
            guard let next = rest.popFirst() else { throw UsageError("missing value for \(long)", command: root.name) }
            value = next
        } else if first.hasPrefix(long + "=") {
            value = String(first.dropFirst(long.count + 1))
        } else {
            return nil
        }
        guard let shell = CompletionScript.Shell(rawValue: value) else {
            throw UsageError("bad value `\(value)` for \(long): expected bash, zsh or fish", command: root.name)
        }
        return shell
    }

    /// One command's options and positionals, in any order (GNU permutation). `-h`/`--help` anywhere among the
    /// options prints the help, even beside a mistake; otherwise the first mistake is the error.
    private func parseLeaf(_ spec: CommandSpec, path: [String], _ arguments: ArraySlice<String>) throws(UsageError)
        -> Outcome
    {
        var reading = LeafReading(spec: spec, parsed: ParsedArguments(commandPath: path))
        var rest = arguments
        var optionsEnded = false
        var positionals: [String] = []
        while let token = rest.popFirst() {
            if optionsEnded || token == "-" || !token.hasPrefix("-") {
                positionals.append(token)
            } else if token == "--" {
                optionsEnded = true
            } else if token.hasPrefix("--") {
                reading.readLong(token, &rest)
            } else {
                reading.readShorts(token, &rest)
            }
        }
        if reading.wantsHelp { return .print(HelpText(spec, path: path).text) }
        if let mistake = reading.mistake { throw mistake }
        try assign(positionals, to: spec, &reading.parsed)
        return .run(reading.parsed)
    }

    /// The options of one command line as they are read, and the first mistake among them.
    private struct LeafReading {
        let spec: CommandSpec
        var parsed: ParsedArguments
        var wantsHelp = false
        var mistake: UsageError?

        mutating func fail(_ message: String) {
            if mistake == nil { mistake = parsed.usageError(message) }
        }

        /// `--name`, `--name=value` or `--name value`.
        mutating func readLong(_ token: String, _ rest: inout ArraySlice<String>) {
            let body = token.dropFirst(2)
            let equals = body.firstIndex(of: "=")
            let name = String(body[..<(equals ?? body.endIndex)])
            guard let option = spec.option(long: name) else { return fail("unknown option --\(name)") }
            guard option.takesValue else {
                guard equals == nil else { return fail("--\(name) takes no value") }
                return set(option)
            }
            if let equals {
                record(String(body[body.index(after: equals)...]), for: option)
            } else if let value = Self.separateValue(&rest) {
                record(value, for: option)
            } else {
                fail(
                    "missing value for --\(name) <\(option.valueName)> (write --\(name)=VALUE for a value that starts with -)"
                )
            }
        }

        /// `-x`, a bundle of short flags `-xy`, or `-c value` / `-cvalue`.
        mutating func readShorts(_ token: String, _ rest: inout ArraySlice<String>) {
            var letters = token.dropFirst()
            while let letter = letters.popFirst() {
                guard let option = spec.option(short: letter) else { fail("unknown option -\(letter)"); continue }
                guard option.takesValue else { set(option); continue }
                if !letters.isEmpty {
                    record(String(letters), for: option)
                } else if let value = Self.separateValue(&rest) {
                    record(value, for: option)
                } else {
                    fail(
                        "missing value for -\(letter) <\(option.valueName)> (write -\(letter)VALUE for a value that starts with -)"
                    )
                }
                return
            }
        }

        /// The next word as an option's value, unless it looks like an option itself: `--control-socket
        /// --dry-run` must not quietly take `--dry-run` as a path and drop the flag (a `clear` would then delete).
        /// `-` alone is a value; a value that starts with `-` is written attached (`--name=-x`, `-c-x`).
        static func separateValue(_ rest: inout ArraySlice<String>) -> String? {
            guard let next = rest.first, next == "-" || !next.hasPrefix("-") else { return nil }
            return rest.popFirst()
        }

        private mutating func set(_ flag: OptionSpec) {
            if flag.long == CommandSpec.help.long { wantsHelp = true } else { parsed.flags.insert(flag.long) }
        }

        /// A value of `option`; a second one of an option that takes one is a mistake (which would win?).
        private mutating func record(_ value: String, for option: OptionSpec) {
            if option.kind == .value, let first = parsed.optionValues[option.long]?.first {
                return fail("--\(option.long) is given twice (`\(first)`, then `\(value)`); give it once")
            }
            parsed.optionValues[option.long, default: []].append(value)
        }
    }

    /// Positionals to the command's arguments, in order; the last may take the rest.
    private func assign(_ positionals: [String], to spec: CommandSpec, _ parsed: inout ParsedArguments)
        throws(UsageError)
    {
        var rest = positionals[...]
        for argument in spec.arguments {
            if argument.repeated {
                parsed.argumentValues[argument.name] = Array(rest)
                rest = []
            } else if let value = rest.popFirst() {
                parsed.argumentValues[argument.name] = [value]
            } else if !argument.optional {
                throw parsed.usageError("missing argument <\(argument.name)>")
            }
        }
        if let extra = rest.first { throw parsed.usageError("unexpected argument `\(extra)`") }
    }

    /// `--name` of `--name=value`, for messages.
    private static func name(of token: String) -> String {
        String(token.prefix { $0 != "=" })
    }
}
