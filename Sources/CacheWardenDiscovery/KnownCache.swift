import CacheWarden

/// A cache a tool keeps in a known place: where it is (honouring the tool's own variable), the profile that keeps
/// the tool working while it is trimmed, and, for tools without a profile of their own, the files to protect.
struct KnownCache: Sendable {
    /// The name in the config (`dir.<name>.…`); a second folder of the same tool gets `-2`, `-3`, ….
    var name: String
    /// What the table shows as the tool.
    var client: String
    var profile: CacheProfile = .generic
    /// Written as `protect` for a tool without a profile (its index files, its locks).
    var protect: [String] = []
    /// The folders this tool's cache may be in; only those that exist are taken.
    var locate: @Sendable (CacheLocations) -> [String]
}

extension KnownCache {
    /// `pattern` with its one `*` segment expanded against the file system (browser profiles: `*/Cache`).
    static func expand(_ base: String, _ pattern: String) -> [String] {
        let parts = pattern.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.first == "*" else { return [DiscoveryPath.join(base, pattern)] }
        let rest = parts.count > 1 ? parts[1] : ""
        // The folder listed is where `base` leads (a browser's cache folder may be a symlink to another disk), as
        // any other known cache's path is resolved; whether that is outside the home is judged later, alike.
        guard let real = DiscoveryPath.existingDirectory(base) else { return [] }
        return DiscoveryPath.entries(real).map { DiscoveryPath.join(DiscoveryPath.join(real, $0), rest) }
    }
}
