/// Where one home's caches live, computed as the tools compute them: the XDG base directories and each tool's
/// own variable. An empty variable counts as unset, and so does a relative one (the XDG rule; a tool would resolve
/// it against whatever folder it was started in, which says nothing about where its cache is now).
package struct CacheLocations: Sendable {
    /// The home folder (absolute).
    package let home: String
    /// The variables that apply to this home: this process's environment for one's own home, none for another's.
    package let environment: [String: String]

    package init(home: String, environment: [String: String]) {
        self.home = home
        self.environment = environment
    }

    /// A variable's value when it is set to an absolute path.
    package func variable(_ name: String) -> String? {
        guard let value = environment[name], value.hasPrefix("/") else { return nil }
        return value
    }

    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    package var cacheHome: String { variable("XDG_CACHE_HOME") ?? inHome(".cache") }

    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    package var dataHome: String { variable("XDG_DATA_HOME") ?? inHome(".local/share") }

    /// `relative` under the home.
    package func inHome(_ relative: String) -> String { DiscoveryPath.join(home, relative) }

    /// The first of `variables` that is set, else `fallback`.
    package func firstVariable(_ variables: [String], else fallback: String) -> String {
        for name in variables { if let v = variable(name) { return v } }
        return fallback
    }
}
