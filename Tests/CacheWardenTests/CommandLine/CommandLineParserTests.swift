import CacheWardenCommandLine
import Testing

/// What the option syntax (checked against getopt_long in `CommandLineParserReferenceTests`) does not cover: the
/// subcommand level, help and version, positional arguments and the typed accessors' errors.
@Suite struct CommandLineParserTests {
    static let root = CommandSpec(
        "tool", abstract: "Does things.",
        subcommands: [
            CommandSpec(
                "trim", abstract: "Trims one.", options: [.value("to", "size", help: "The target.")],
                arguments: [ArgumentSpec("name", help: "Which one.")]),
            CommandSpec(
                "clear", abstract: "Clears some.",
                options: [.value("depth", "n", help: "How deep."), .value("limit", "s", help: "Seconds.")],
                arguments: [ArgumentSpec("names", help: "Which ones.", repeated: true)]),
            CommandSpec("secret", abstract: "Hidden.", hidden: true),
        ],
        version: "1.2.3"
    )

    func parse(_ args: [String]) throws(UsageError) -> CommandLineParser.Outcome {
        try CommandLineParser(root: Self.root).parse(args)
    }

    func printed(_ args: [String]) throws -> String {
        guard case .print(let text) = try parse(args) else { Issue.record("\(args) did not print"); return "" }
        return text
    }

    func parsed(_ args: [String]) throws -> ParsedArguments {
        guard case .run(let p) = try parse(args) else {
            throw UsageError("printed instead of running", command: "test")
        }
        return p
    }

    func error(_ args: [String]) -> String {
        do { _ = try parse(args) } catch { return error.description }
        Issue.record("\(args) was accepted")
        return ""
    }

    @Test func versionAndHelpPrintAndHiddenCommandsStayHidden() throws {
        #expect(try printed(["--version"]) == "1.2.3\n")
        let help = try printed(["--help"])
        #expect(help.contains("OVERVIEW: Does things.") && help.contains("  trim ") && help.contains("  clear "))
        #expect(!help.contains("secret"))
        #expect(try printed(["-h"]) == help)
        #expect(try printed(["help"]) == help)
        let trimHelp = try printed(["help", "trim"])
        #expect(trimHelp.contains("USAGE: tool trim [--to <size>] <name>"), "\(trimHelp)")
        #expect(try printed(["trim", "--help"]) == trimHelp)
        #expect(try printed(["trim", "x", "--bogus", "-h"]) == trimHelp) // help wins over a mistake beside it
        #expect(try printed(["trim", "--to", "-h", "x"]) == trimHelp) // an option is never taken as a value
        #expect(try parsed(["trim", "--to=-h", "x"]).value("to") == "-h") // unless attached
        #expect(try parsed(["secret"]).commandPath == ["tool", "secret"])
    }

    @Test func everyHelpLineFitsEightyColumns() throws {
        for args in [["--help"], ["help", "trim"], ["help", "clear"]] {
            for line in try printed(args).split(separator: "\n") { #expect(line.count <= 80, "\(args): \(line)") }
        }
    }

    @Test func positionalsGoToTheirArguments() throws {
        let trim = try parsed(["trim", "--to", "5MB", "img"])
        #expect(trim.argument("name") == "img" && trim.value("to") == "5MB" && trim.command == "tool trim")
        #expect(try parsed(["clear"]).arguments("names") == [])
        #expect(try parsed(["clear", "a", "--depth", "3", "b", "--", "--c"]).arguments("names") == ["a", "b", "--c"])
    }

    @Test func mistakesAreOneLineNamingWhatAndWhereToRead() {
        #expect(error([]) == "missing command; expected one of trim, clear (see `tool --help`)")
        #expect(error(["trmi"]) == "unknown command `trmi`; expected one of trim, clear (see `tool --help`)")
        #expect(error(["--bogus"]) == "unknown option --bogus (see `tool --help`)")
        #expect(error(["help", "nope"]) == "unknown command `nope`; expected one of trim, clear (see `tool --help`)")
        #expect(error(["trim"]) == "missing argument <name> (see `tool trim --help`)")
        #expect(error(["trim", "a", "b"]) == "unexpected argument `b` (see `tool trim --help`)")
        #expect(
            error(["trim", "a", "--to"])
                == "missing value for --to <size> (write --to=VALUE for a value that starts with -) (see `tool trim --help`)"
        )
        #expect(error(["trim", "a", "--to=1", "--x"]) == "unknown option --x (see `tool trim --help`)")
        #expect(
            error(["--generate-completion-script", "tcsh"])
                == "bad value `tcsh` for --generate-completion-script: expected bash, zsh or fish (see `tool --help`)")
        #expect(
            error(["clear", "--depth", "1", "--depth=2"])
                == "--depth is given twice (`1`, then `2`); give it once (see `tool clear --help`)")
    }

    @Test func aWordAfterWhatTheRootPrintsIsAnErrorUnlessItAsksForHelp() throws {
        // These used to print and ignore the word.
        #expect(error(["--version", "extra"]) == "unexpected argument `extra` (see `tool --help`)")
        #expect(error(["help", "trim", "extra"]) == "unexpected argument `extra` (see `tool --help`)")
        #expect(
            error(["--generate-completion-script", "bash", "extra"])
                == "unexpected argument `extra` (see `tool --help`)")
        #expect(error(["--generate-completion-script=zsh", "--x"]) == "unexpected argument `--x` (see `tool --help`)")
        let help = try printed(["--help"])
        #expect(try printed(["--version", "--help"]) == help)
        #expect(try printed(["help", "trim", "-h"]) == help)
        #expect(try printed(["--version"]) == "1.2.3\n")
    }

    @Test func typedValuesNameTheOptionAndTheirRange() throws {
        let p = try parsed(["clear", "--depth", "70", "--limit", "x"])
        #expect(
            throws: UsageError(
                "bad value `70` for --depth: expected a whole number from 0 to 64", command: "tool clear")
        ) {
            try p.integer("depth", in: 0...64)
        }
        #expect(
            throws: UsageError("bad value `x` for --limit: expected a number from 0 to 3600", command: "tool clear")
        ) {
            try p.number("limit", in: 0...3600)
        }
        let q = try parsed(["clear", "--depth=7", "--limit", "2.5"])
        #expect(try q.integer("depth", in: 0...64) == 7)
        #expect(try q.number("limit", in: 0...3600) == 2.5)
        #expect(try q.integer("absent") == nil)
    }
}
