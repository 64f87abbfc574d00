/// `~` and environment variables in the path-valued keys of a config file (`dir.<name>.path`, `control_socket`,
/// `metrics_file`). The rule, exactly:
///
/// - `~` alone or `~/` at the very start of the value is the home directory (`DefaultLocations.home`: `$HOME`,
///   else the user database). `~name` is an error; a `~` anywhere else is an ordinary character.
/// - `$NAME` and `${NAME}` anywhere (NAME: a letter or `_`, then letters, digits or `_`; `$NAME` takes the longest
///   such run) are the variable's value. `HOME` is the home directory as for `~`; `XDG_CACHE_HOME`,
///   `XDG_CONFIG_HOME`, `XDG_DATA_HOME` and `XDG_STATE_HOME` fall back to `~/.cache`, `~/.config`,
///   `~/.local/share` and `~/.local/state`. Any other variable that is unset or empty is an error: a path must
///   never lose a component silently (`$UNSET/cache` would become `/cache`).
/// - `$$` is one literal `$`; any other `$` is an error.
/// - Values are inserted as they are, never expanded again.
package struct PathExpansion: Sendable {
    let locations: DefaultLocations

    /// What is wrong with a value, as one sentence.
    struct Failure: Error {
        var message: String
    }

    func expand(_ value: String) throws(Failure) -> String {
        var rest = Substring(value)
        var out = ""
        if rest.first == "~" {
            let user = rest.dropFirst().prefix { $0 != "/" }
            guard user.isEmpty else {
                throw Failure(
                    message: "`~\(user)` is not supported (only `~` or `~/…`, your own home); write the full path")
            }
            out = try home(for: "~")
            rest = rest.dropFirst()
        }
        while let dollar = rest.firstIndex(of: "$") {
            out += rest[..<dollar]
            rest = rest[rest.index(after: dollar)...]
            if rest.first == "$" {
                out += "$"
                rest = rest.dropFirst()
                continue
            }
            let name: Substring
            if rest.first == "{" {
                guard let close = rest.firstIndex(of: "}") else { throw Self.badDollar }
                name = rest[rest.index(after: rest.startIndex)..<close]
                rest = rest[rest.index(after: close)...]
            } else {
                name = rest.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
                rest = rest.dropFirst(name.count)
            }
            guard let first = name.first, first.isLetter || first == "_",
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            else { throw Self.badDollar }
            out += try variable(String(name))
        }
        return out + rest
    }

    static let badDollar = Failure(
        message: "a `$` must start $NAME or ${NAME} (a variable) or be doubled ($$, a literal $)")

    private func variable(_ name: String) throws(Failure) -> String {
        if name == "HOME" { return try home(for: "$HOME") }
        if DefaultLocations.baseDirectoryDefaults[name] != nil {
            guard let dir = locations.baseDirectory(name) else {
                throw Failure(
                    message: "$\(name) is not set, and its default (under the home directory) needs a home: \(noHome)")
            }
            return dir
        }
        guard let value = locations.variable(name) else {
            throw Failure(message: "$\(name) is not set; set it in the environment or write the path out")
        }
        guard !value.isEmpty else {
            throw Failure(message: "$\(name) is empty; set it to a folder or write the path out")
        }
        return value
    }

    private func home(for what: String) throws(Failure) -> String {
        guard let home = locations.home else { throw Failure(message: "no home directory for \(what): \(noHome)") }
        return home
    }

    /// `path` written so that expansion reads it back as it is: each `$` doubled. (A leading `~` is the caller's:
    /// `--dir` puts `./` before it; `discover` writes `~/` itself for the home.)
    package static func escapingDollars(_ path: String) -> String {
        path.split(separator: "$", omittingEmptySubsequences: false).joined(separator: "$$")
    }

    private var noHome: String {
        "$HOME is not an absolute path and user \(locations.euid) has none in the user database"
    }
}

extension ConfigFileParser {
    /// Whether `key`'s value is a path, where `~` and variables are expanded.
    static func isPathKey(_ key: String) -> Bool {
        key == "control_socket" || key == "metrics_file" || (key.hasPrefix("dir.") && key.hasSuffix(".path"))
    }

    /// `value` expanded when `key` holds a path; a failure names the file, the line and the key.
    func expandingPath(_ value: String, key: String, line: Int) throws(ConfigError) -> String {
        guard Self.isPathKey(key) else { return value }
        let expanded: String
        do throws(PathExpansion.Failure) { expanded = try PathExpansion(locations: locations).expand(value) } catch {
            throw ConfigError(file: file, line: line, message: "\(key): \(error.message)")
        }
        // A variable's value is held to the file's rule: no control character cuts or disguises the path.
        if let bad = Self.firstControl(in: expanded) {
            throw ConfigError(
                file: file, line: line,
                message: "\(key): the expanded path has the control character \(bad); write the path out")
        }
        return expanded
    }
}
