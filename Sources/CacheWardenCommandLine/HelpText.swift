/// A command's `--help`: overview, usage, arguments, options and subcommands, wrapped to 80 columns.
struct HelpText {
    let spec: CommandSpec
    let path: [String]

    init(_ spec: CommandSpec, path: [String]) {
        self.spec = spec
        self.path = path
    }

    static let width = 80
    /// Where the descriptions of options and subcommands start.
    static let column = 28

    var text: String {
        var out = "OVERVIEW: \(spec.abstract)\n\n"
        if !spec.discussion.isEmpty { out += Self.wrap(spec.discussion, indent: 0) + "\n\n" }
        out += Self.wrap(usage, indent: 0, firstPrefix: "USAGE: ", hangingIndent: 2) + "\n"
        if !spec.arguments.isEmpty {
            out += "\nARGUMENTS:\n" + spec.arguments.map { Self.entry("<\($0.name)>", $0.help) }.joined()
        }
        out += "\nOPTIONS:\n" + spec.listedOptions.map { Self.entry($0.synopsis, $0.help) }.joined()
        let subs = spec.listedSubcommands
        if !subs.isEmpty {
            out += "\nSUBCOMMANDS:\n" + subs.map { Self.entry($0.name, $0.abstract) }.joined()
            out += "\n  See '\(path.joined(separator: " ")) help <subcommand>' for detailed help.\n"
        }
        return out
    }

    /// `cachewarden run [--config <file>] [--dry-run] <name>`.
    var usage: String {
        var words = [path.joined(separator: " ")]
        if !spec.subcommands.isEmpty {
            words.append("<subcommand>")
        } else {
            words += spec.options.map { o in
                let name = o.short.map { "-\($0)" } ?? "--\(o.long)"
                let shown = o.takesValue ? "\(name) <\(o.valueName)>" : name
                return o.kind == .repeated ? "[\(shown) ...]" : "[\(shown)]"
            }
            words += spec.arguments.map(\.synopsis)
        }
        return words.joined(separator: " ")
    }

    /// `  -c, --config <file>     The key = value config file.` with the description wrapped under itself.
    static func entry(_ name: String, _ description: String) -> String {
        let head = "  " + name
        let body = wrap(description, indent: column)
        if head.count + 2 <= column {
            return head + String(repeating: " ", count: column - head.count) + body.dropFirst(column) + "\n"
        }
        return head + "\n" + body + "\n"
    }

    /// `text` in lines of at most `width` columns, each indented by `indent` (the first by `firstPrefix`, the
    /// rest by `hangingIndent` more); a word longer than a line stays whole.
    static func wrap(_ text: String, indent: Int, firstPrefix: String = "", hangingIndent: Int = 0) -> String {
        var lines: [String] = []
        var line = String(repeating: " ", count: indent) + firstPrefix
        var lineHasWord = false
        let rest = String(repeating: " ", count: indent + hangingIndent)
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if lineHasWord && line.count + 1 + word.count > width {
                lines.append(line)
                line = rest
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}
