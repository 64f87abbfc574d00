import CacheWarden

/// Bazel's disk cache exists only where a `.bazelrc` sets one: `build --disk_cache=~/.cache/bazel-disk` (or
/// `--disk_cache PATH`). Reads the user's `~/.bazelrc`; `%workspace%` paths belong to one project and are skipped.
enum BazelRC {
    static func diskCaches(home: String) -> [String] {
        guard let text = FileContents.read(DiscoveryPath.join(home, ".bazelrc"), limit: 1 << 20) else { return [] }
        return diskCaches(in: text, home: home)
    }

    /// The `--disk_cache` values in a bazelrc's text, `~/` expanded against `home`.
    static func diskCaches(in text: String, home: String) -> [String] {
        var found: [String] = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            for (i, word) in words.enumerated() {
                var value: String?
                if word.hasPrefix("--disk_cache=") {
                    value = String(word.dropFirst("--disk_cache=".count))
                } else if word == "--disk_cache", i + 1 < words.count {
                    value = words[i + 1]
                }
                guard var path = value?.trimmingCharacters(in: "\"'"), !path.isEmpty else { continue }
                if path.hasPrefix("~/") { path = DiscoveryPath.join(home, String(path.dropFirst(2))) }
                if path.hasPrefix("/") { found.append(path) }
            }
        }
        return found
    }
}

extension String {
    /// The string without any of `characters` at either end.
    func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
