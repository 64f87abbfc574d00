import CacheWarden
import Glibc

/// nginx's cache folders, from its configuration: the first argument of every `proxy_cache_path`,
/// `fastcgi_cache_path`, `uwsgi_cache_path` and `scgi_cache_path`, following `include` (globs too, relative to the
/// main file's folder, as nginx resolves them). Unreadable files are skipped: discovery reports what it can see.
enum NginxConfig {
    static let cacheDirectives: Set<String> = [
        "proxy_cache_path", "fastcgi_cache_path", "uwsgi_cache_path", "scgi_cache_path",
    ]

    static func cachePaths(mainFile: String) -> [String] {
        var visited = Set<String>(), found: [String] = []
        read(mainFile, prefix: PathResolver.parent(of: mainFile), visited: &visited, found: &found)
        return found
    }

    private static func read(_ file: String, prefix: String, visited: inout Set<String>, found: inout [String]) {
        guard visited.count < 256, visited.insert(file).inserted, let text = FileContents.read(file, limit: 1 << 20)
        else { return }
        for statement in statements(text) {
            guard let directive = statement.first, statement.count > 1 else { continue }
            if cacheDirectives.contains(directive) {
                found.append(DiscoveryPath.join(prefix, statement[1]))
            } else if directive == "include" {
                for included in glob(DiscoveryPath.join(prefix, statement[1])) {
                    read(included, prefix: prefix, visited: &visited, found: &found)
                }
            }
        }
    }

    /// The words of each `;`-ended statement (comments dropped, quotes removed; blocks' braces end statements).
    static func statements(_ text: String) -> [[String]] {
        var all: [[String]] = [], current: [String] = [], word = "", quote: Character?, comment = false
        func flushWord() { if !word.isEmpty { current.append(word); word = "" } }
        for c in text {
            if comment { comment = !c.isNewline; continue } // "\r\n" is one Character
            if let q = quote {
                if c == q { quote = nil } else { word.append(c) }
                continue
            }
            switch c {
            case "#": flushWord(); comment = true
            case "\"", "'": quote = c
            case _ where c.isWhitespace: flushWord()
            case ";", "{", "}": flushWord(); if !current.isEmpty { all.append(current) }; current = []
            default: word.append(c)
            }
        }
        return all
    }

    /// glob(3): nginx's `include` takes shell patterns (`conf.d/*.conf`); sorted matches, none when nothing matches.
    static func glob(_ pattern: String) -> [String] {
        var g = glob_t()
        defer { globfree(&g) }
        guard Glibc.glob(pattern, 0, nil, &g) == 0 else { return [] }
        return (0..<Int(g.gl_pathc)).compactMap { g.gl_pathv[$0].map { String(cString: $0) } }
    }
}
