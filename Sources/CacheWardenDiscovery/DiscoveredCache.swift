import CacheWarden
import FoundationEssentials

/// A cache `discover` found: where, what tool it belongs to, what a read-only scan measured, and the quota it
/// proposes.
package struct DiscoveredCache: Sendable, Equatable {
    /// How it was found.
    package enum Source: String, Sendable {
        /// In a tool's known place (`KnownCaches`).
        case known
        /// A folder holding a `CACHEDIR.TAG`.
        case tagged
        /// A `*_cache_path` in nginx's configuration.
        case nginx
    }

    /// The name in the config (`dir.<name>.…`).
    package var name: String
    /// The tool, as the table shows it.
    package var client: String
    /// The real path (symlinks resolved).
    package var path: String
    package var profile: CacheProfile
    /// Written as `protect` (tools without a profile of their own).
    package var protect: [String]
    package var source: Source
    /// What a watcher would count today (the default `size_basis`, allocated blocks), and the files.
    package var total: Int64 = 0
    package var files: Int = 0
    /// The age key of the oldest file under the profile's `order`, if any.
    package var oldest: Date?
    /// The size of the filesystem holding it.
    package var filesystemSize: Int64 = 0
    package var proposedQuota: Int64 = 0
    /// Why it could not be measured (it is then left out of the written config).
    package var problem: String?

    /// Whether it joins the shared group: every cache that is proposed (measured) does. A group trim honours each
    /// member's rules as its own quota trim does — whole folders for a profile with `evict_unit` (uv, cargo,
    /// Hugging Face), nothing while its tool is busy for one with `trim_after_idle` (Go, sccache, Bazel, …).
    package var joinsGroup: Bool { problem == nil }

    /// The directory settings this cache is registered with (before quota and group).
    package var settings: DirectorySettings {
        var d = DirectorySettings(name: name, path: path, profile: profile)
        if !protect.isEmpty { d.protect = protect }
        return d
    }
}
