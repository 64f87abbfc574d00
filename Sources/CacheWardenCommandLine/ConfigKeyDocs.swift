import CacheWarden

/// docs/configuration.md's key reference and the `cachewarden.conf(5)` manual page, both from `ConfigKey.all`
/// (`cachewarden keys --format markdown|man`).
package enum ConfigKeyDocs {
    static let headings: [(ConfigKey.Scope, String, String)] = [
        (.global, "Global keys", "GLOBAL KEYS"),
        (.directory, "Directory keys: `dir.<name>.*`", "DIRECTORY KEYS"),
        (.group, "Group keys: `group.<g>.*`", "GROUP KEYS"),
    ]

    /// The Markdown block pasted between `<!-- keys:begin -->` and `<!-- keys:end -->` (no trailing newline).
    package static func markdown() -> String {
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
    package static func man(version: String) -> String {
        var out = [
            ".TH CACHEWARDEN.CONF 5 \"\" \"cachewarden \(escape(version))\" \"File Formats Manual\"",
            ".SH NAME", "cachewarden.conf \\- configuration file of cachewarden(1)",
            ".SH SYNOPSIS", ".B cachewarden run \\-\\-config", ".I FILE",
            ".SH DESCRIPTION",
            "A YAML-free text file: one \\fBkey = value\\fR per line. \\fB#\\fR at the start of a line or after whitespace "
                + "starts a comment; blank lines are ignored; whitespace around keys and values is trimmed. Unknown keys, "
                + "duplicate keys, empty values, bad values and missing paths are errors naming the file and line. Only "
                + "a newline (or CR LF) ends a line; other line breaks (U+000B, U+000C, a lone CR, U+0085, U+2028, "
                + "U+2029) and control characters are errors.",
            ".PP",
            "Relative paths are relative to the config file's folder. At least one directory must be registered, "
                + "each needs a path, and registered directories must not nest. Names (\\fIname\\fR, \\fIg\\fR) are "
                + "ASCII letters, digits, \\fB_\\fR and \\fB\\-\\fR.",
            ".PP",
            "Sizes take B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024) and are a whole "
                + "number of bytes below 8 EiB (0.4B is an error, not 0); ages are a whole number with s, m, h, d, w "
                + "or mo (30 days), at most 36500d (100 years); intervals are written as ages without mo and are at "
                + "most 1w; a share is a percentage or a size; booleans are true/false, yes/no, on/off, 1/0; globs are "
                + "comma-separated. A value past its bound is an error naming the file and line.",
        ]
        for (scope, _, title) in headings {
            out.append(".SH \(title)")
            for k in ConfigKey.keys(scope) {
                out += [
                    ".TP",
                    "\\fB\(escape(plain(k.name)))\\fR = \\fI\(escape(plain(k.value)))\\fR "
                        + "(default: \(escape(plain(k.defaultValue))))", escape(plain(k.summary)),
                ]
            }
        }
        out += pathRule
        out += [".SH SEE ALSO", "cachewarden(1)"]
        return out.joined(separator: "\n") + "\n"
    }

    /// The rule for `dir.<name>.path`, as docs/configuration.md's "Which folders may be registered" says it.
    static let pathRule = [
        ".SH WHICH FOLDERS MAY BE REGISTERED",
        "A folder is trimmed only when something says it is a cache. \\fBcheck\\fR, \\fBrun\\fR and reloads accept a "
            + "\\fBdir.\\fIname\\fB.path\\fR when it is not protected (below) and",
        ".IP \\(bu 2",
        "it lies in a cache place: \\fB~/.cache\\fR of any home, \\fB$XDG_CACHE_HOME\\fR, \\fB/var/cache\\fR, "
            + "anything in \\fB/tmp\\fR, \\fB/var/tmp\\fR or \\fB/dev/shm\\fR (not in a home there), or a tool's cache folder "
            + "(\\fB~/.npm/_cacache\\fR, \\fB~/.cargo/registry\\fR, \\fB~/.gradle/caches\\fR, \\fB~/.ccache\\fR, pnpm's store, "
            + "and where PIP_CACHE_DIR, UV_CACHE_DIR, GOCACHE, CCACHE_DIR, SCCACHE_DIR, HF_HUB_CACHE, HF_HOME, "
            + "npm_config_cache, YARN_CACHE_FOLDER, npm_config_store_dir, CARGO_HOME and GRADLE_USER_HOME put it, "
            + "unless they name a protected folder) \\(em at every path the folder has (bind mounts included); or",
        ".IP \\(bu 2",
        "it, or a folder above it on the same mount short of a refused one, holds a \\fBCACHEDIR.TAG\\fR beginning with "
            + "the standard signature, owned by root or by that folder's owner, in a folder not writable by everyone; or",
        ".IP \\(bu 2", "it does not exist and \\fBcreate = true\\fR: \\fBrun\\fR makes it and tags it.",
        ".PP",
        "Anything else is refused with one line naming the file and line and the two ways out: a "
            + "\\fBCACHEDIR.TAG\\fR in the folder, or \\fBdir.\\fIname\\fB.allow_any_path = true\\fR, which warns.",
        ".PP",
        "Protected, whatever says it is a cache (only \\fBallow_any_path\\fR accepts one): a folder that is or "
            + "holds the home of any account (but one in /var/cache), a top-level folder, "
            + "anything under /usr, /etc, /boot, /proc, /sys, /dev (but in /dev/shm), /bin, /sbin, /lib*, /nix, and "
            + "anything under /var but its cache places. The path as written, where it leads and every other path "
            + "of the same folder (bind mounts, by device and inode and by the mount table) are judged, and a folder "
            + "holding a mount of a protected folder is protected. The filesystem root and a folder holding "
            + "CacheWarden's own config file, control socket or metrics file have no way out.",
        ".PP",
        "A registered folder that is lost and comes back is taken back only when it is accepted again and is "
            + "the same folder of the same filesystem it was registered on.",
    ]

    /// Markdown to plain text: no backticks, `\|` is `|`.
    static func plain(_ text: String) -> String {
        text.replacing("`", with: "").replacing("\\|", with: "|")
    }

    static func escape(_ text: String) -> String { Roff.escape(text) }
}
