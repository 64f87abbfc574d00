/// Matches paths relative to a registered root against `protect`/`exclude` globs: `*` matches within one path
/// segment, `**` across segments, `?` one character. A glob without `/` also matches the last segment anywhere
/// (`*.db` protects `a/b/c.db`), as in `.gitignore`; and as there, a leading `/` anchors a glob to the root
/// (`/CACHEDIR.TAG` is the root's tag only, not one inside a cache entry).
package struct GlobMatcher: Sendable {
    private let patterns: [[UInt8]]

    package init(_ globs: [String]) { patterns = globs.map { Array($0.utf8) } }

    package var isEmpty: Bool { patterns.isEmpty }

    package func matches(_ path: [UInt8]) -> Bool {
        for p in patterns {
            let anchored = p.first == Self.slash
            let p = anchored ? p.dropFirst() : p[...]
            if Self.match(p, path[...]) { return true }
            if !anchored, !p.contains(UInt8(ascii: "/")), let slash = path.lastIndex(of: UInt8(ascii: "/")),
                Self.match(p, path[(slash + 1)...])
            {
                return true
            }
            // `dir/**` also matches the directory itself.
            if p.count > 3, p.suffix(3).elementsEqual("/**".utf8), Self.match(p.dropLast(3), path[...]) { return true }
        }
        return false
    }

    private static let star = UInt8(ascii: "*"), slash = UInt8(ascii: "/"), question = UInt8(ascii: "?")

    private static func match(_ p: ArraySlice<UInt8>, _ s: ArraySlice<UInt8>) -> Bool {
        var p = p, s = s
        while let c = p.first {
            if c == star {
                if p.dropFirst().first == star {
                    var rest = p.dropFirst(2)
                    if rest.first == slash { rest = rest.dropFirst() }
                    if rest.isEmpty { return true }
                    var t = s
                    while true {
                        if match(rest, t) { return true }
                        guard let i = t.firstIndex(of: slash) else { return false }
                        t = t[(i + 1)...]
                    }
                }
                let rest = p.dropFirst()
                var t = s
                while true {
                    if match(rest, t) { return true }
                    guard let f = t.first, f != slash else { return false }
                    t = t.dropFirst()
                }
            }
            guard let f = s.first else { return false }
            if c == question ? f == slash : c != f { return false }
            p = p.dropFirst()
            s = s.dropFirst()
        }
        return s.isEmpty
    }
}
