import CacheWarden

/// docs/configuration.md's key reference and the `cachewarden.conf(5)` manual page, both from `ConfigKey.all`
/// (`cachewarden keys --format markdown|man`).
public enum ConfigKeyDocs {
    static let headings: [(ConfigKey.Scope, String, String)] = [
        (.global, "Global keys", "GLOBAL KEYS"),
        (.directory, "Directory keys: `dir.<name>.*`", "DIRECTORY KEYS"),
        (.group, "Group keys: `group.<g>.*`", "GROUP KEYS"),
    ]

    /// The Markdown block pasted between `<!-- keys:begin -->` and `<!-- keys:end -->` (no trailing newline).
    public static func markdown() -> String {
        var out: [String] = []
        for (scope, title, _) in headings {
            out += ["## \(title)", "", "| key | value | default | meaning |", "|---|---|---|---|"]
            for k in ConfigKey.keys(scope) {
                out.append("| `\(k.name)` | \(k.value) | \(k.defaultValue) | \(k.summary) |")
            }
            out.append("")
        }
        out.removeLast()
        return out.joined(separator: "\n")
    }

    /// `cachewarden.conf(5)` in roff (man macros).
    public static func man(version: String) -> String {
        var out = [
            ".TH CACHEWARDEN.CONF 5 \"\" \"cachewarden \(escape(version))\" \"File Formats Manual\"",
            ".SH NAME", "cachewarden.conf \\- configuration file of cachewarden(1)",
            ".SH SYNOPSIS", ".B cachewarden run \\-\\-config", ".I FILE",
            ".SH DESCRIPTION",
            "A YAML-free text file: one \\fBkey = value\\fR per line. \\fB#\\fR at the start of a line or after whitespace "
                + "starts a comment; blank lines are ignored; whitespace around keys and values is trimmed. Unknown keys, "
                + "duplicate keys, empty values, bad values and missing paths are errors naming the file and line.",
            ".PP", "Relative paths are relative to the config file's folder. At least one directory must be registered, "
                + "each needs a path, and registered directories must not nest. Names (\\fIname\\fR, \\fIg\\fR) are "
                + "ASCII letters, digits, \\fB_\\fR and \\fB\\-\\fR.",
            ".PP", "Sizes take B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024); ages are a "
                + "whole number with s, m, h, d or w (max_age and min_age also take mo); a share is a percentage or a "
                + "size; booleans are true/false, yes/no, on/off, 1/0; globs are comma-separated.",
        ]
        for (scope, _, title) in headings {
            out.append(".SH \(title)")
            for k in ConfigKey.keys(scope) {
                out += [".TP", "\\fB\(escape(plain(k.name)))\\fR = \\fI\(escape(plain(k.value)))\\fR "
                            + "(default: \(escape(plain(k.defaultValue))))", escape(plain(k.summary))]
            }
        }
        out += [".SH SEE ALSO", "cachewarden(1)"]
        return out.joined(separator: "\n") + "\n"
    }

    /// Markdown to plain text: no backticks, `\|` is `|`.
    static func plain(_ text: String) -> String {
        text.replacing("`", with: "").replacing("\\|", with: "|")
    }

    static func escape(_ text: String) -> String { Roff.escape(text) }
}
