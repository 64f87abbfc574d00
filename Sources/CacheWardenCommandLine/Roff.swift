/// Text for roff's man macros: the one escaper of both manual pages (`cachewarden.1`, `cachewarden.conf.5`).
enum Roff {
    /// roff-safe text: backslashes, hyphens, `×`, `—` and `…` escaped, no line starting with a control character.
    static func escape(_ text: String) -> String {
        var s = text.replacing("\\", with: "\\e")
        for (from, to) in [("-", "\\-"), ("×", "\\(mu"), ("—", "\\(em"), ("…", "...")] {
            s = s.replacing(from, with: to)
        }
        return s.hasPrefix(".") || s.hasPrefix("'") ? "\\&" + s : s
    }

    /// Markdown's `code` spans in bold (`\fB…\fR`), the rest escaped.
    static func fromMarkdown(_ text: String) -> String {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().map { i, part in
            i % 2 == 1 ? "\\fB\(escape(String(part)))\\fR" : escape(String(part))
        }.joined()
    }
}
