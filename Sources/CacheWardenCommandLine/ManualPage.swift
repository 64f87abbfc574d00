/// A command tree's manual page (section 1) in roff with man macros: name, synopsis, description, the root's
/// options, then each subcommand with its usage, text, arguments and options. What `make man` installs as
/// `cachewarden.1`.
package struct ManualPage: Sendable {
    let root: CommandSpec
    /// Extra sections before SEE ALSO: (title, paragraphs).
    let extra: [(String, [String])]
    let seeAlso: [String]

    package init(root: CommandSpec, extra: [(String, [String])] = [], seeAlso: [String] = []) {
        self.root = root
        self.extra = extra
        self.seeAlso = seeAlso
    }

    package var text: String {
        let name = root.name
        var out = [
            ".TH \(name.uppercased()) 1 \"\" \"\(Roff.escape(root.version.map { "\(name) \($0)" } ?? name))\" \"User Commands\"",
            ".SH NAME", "\(Roff.escape(name)) \\- \(Roff.fromMarkdown(root.abstract))",
            ".SH SYNOPSIS", ".B \(Roff.escape(name))", root.subcommands.isEmpty ? ".RI [ options ]" : ".I command",
            ".RI [ options ]",
        ]
        if !root.discussion.isEmpty { out += [".SH DESCRIPTION", Roff.fromMarkdown(root.discussion)] }
        out += [".SH OPTIONS"] + root.listedOptions.flatMap(Self.option)
        if !root.listedSubcommands.isEmpty {
            out.append(".SH COMMANDS")
            for sub in root.listedSubcommands { out += command(sub) }
        }
        for (title, paragraphs) in extra {
            out.append(".SH \(title.uppercased())")
            out += paragraphs.map(Roff.fromMarkdown).joined(separator: "\n.PP\n").split(separator: "\n").map(
                String.init)
        }
        if !seeAlso.isEmpty { out += [".SH SEE ALSO", seeAlso.map { Roff.escape($0) }.joined(separator: ", ")] }
        return out.joined(separator: "\n") + "\n"
    }

    private func command(_ spec: CommandSpec) -> [String] {
        let usage = HelpText(spec, path: [root.name, spec.name]).usage
        var out = [
            ".SS \(Roff.escape("\(root.name) \(spec.name)"))", Roff.fromMarkdown(spec.abstract), ".PP",
            ".nf", Roff.escape(usage), ".fi",
        ]
        if !spec.discussion.isEmpty { out += [".PP", Roff.fromMarkdown(spec.discussion)] }
        for argument in spec.arguments {
            out += [".TP", "\\fI\(Roff.escape(argument.name))\\fR", Roff.fromMarkdown(argument.help)]
        }
        return out + spec.listedOptions.flatMap(Self.option)
    }

    private static func option(_ o: OptionSpec) -> [String] {
        let names =
            (o.short.map { "\\fB\\-\(Roff.escape(String($0)))\\fR, " } ?? "") + "\\fB\\-\\-\(Roff.escape(o.long))\\fR"
        let value = o.takesValue ? " \\fI\(Roff.escape(o.valueName))\\fR" : ""
        return [".TP", names + value, Roff.fromMarkdown(o.help)]
    }
}
