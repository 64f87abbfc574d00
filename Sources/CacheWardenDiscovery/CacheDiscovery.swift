import CacheWarden
import CacheWardenFilesystem
import Glibc
import Logging

/// `cachewarden discover`: finds the caches in a scope, measures each with a one-shot report (observe mode:
/// nothing is watched, nothing can be deleted), and proposes quotas by `rule`. Found by name first (each tool's
/// known place), then nginx's cache folders, then `CACHEDIR.TAG` folders; a folder that nests with one found
/// before it is dropped, because registered directories must not nest (a tool's known folder wins over a tag).
package struct CacheDiscovery: Sendable {
    package var scope: DiscoveryScope
    package var rule: QuotaRule

    package init(scope: DiscoveryScope, rule: QuotaRule = QuotaRule()) {
        self.scope = scope
        self.rule = rule
    }

    package struct Result: Sendable {
        /// Measured, with proposed quotas, in the order found.
        package var caches: [DiscoveredCache]
        /// False when the `CACHEDIR.TAG` search ran out of time (`tagTimeLimit`).
        package var tagSearchComplete: Bool
        /// The proposed budget of the group of the measured caches that join it (nil when none does).
        package var groupBudget: Int64?
    }

    package func run() -> Result {
        var found: [DiscoveredCache] = []
        if let home = scope.home { found += Self.known(home) }
        if scope.system { found += nginxCaches() }
        let (tagged, complete) = taggedCaches(skipping: found.map(\.path))
        found += tagged
        var caches = Self.withoutNesting(found).filter(isSelected)
        Self.makeNamesUnique(&caches)
        // The variables the caches were located with are the ones whose folders are cache places.
        let environment = scope.home.map { DefaultLocations(environment: $0.environment, euid: geteuid()) } ?? .current
        let guardian = RootGuard.current(
            ownFiles: scope.configFile.map { [("config file", $0)] } ?? [],
            extraHomes: scope.home.map { [$0.home] } ?? [], environment: environment)
        for i in caches.indices {
            caches[i].problem = problem(caches[i], guardian)
            if caches[i].problem == nil { measure(&caches[i]) }
        }
        let members = caches.filter { $0.problem == nil && $0.joinsGroup }
        let budget =
            members.isEmpty
            ? nil
            : rule.groupBudget(
                quotas: members.map(\.proposedQuota),
                filesystem: groupFilesystemSize())
        return Result(caches: caches, tagSearchComplete: complete, groupBudget: budget)
    }

    /// The known caches of a home that exist.
    static func known(_ home: CacheLocations) -> [DiscoveredCache] {
        KnownCaches.user.flatMap { k in
            k.locate(home).compactMap(DiscoveryPath.existingDirectory).map {
                DiscoveredCache(
                    name: k.name, client: k.client, path: $0, profile: k.profile, protect: k.protect, source: .known)
            }
        }
    }

    private func nginxCaches() -> [DiscoveredCache] {
        NginxConfig.cachePaths(mainFile: scope.nginxConfig).compactMap(DiscoveryPath.existingDirectory).map {
            DiscoveredCache(
                name: "nginx-" + Self.nameSegment(PathResolver.lastComponent($0)), client: "nginx", path: $0,
                profile: .nginx, protect: [], source: .nginx)
        }
    }

    private func taggedCaches(skipping known: [String]) -> ([DiscoveredCache], Bool) {
        guard scope.tagDepth > 0 else { return ([], true) }
        let roots = (scope.home.map { [$0.home] } ?? []) + (scope.system ? [scope.systemRoot] : [])
        let clock = ContinuousClock(), deadline = clock.now.advanced(by: scope.tagTimeLimit)
        var found: [DiscoveredCache] = [], complete = true
        for root in roots {
            let left = max(.zero, deadline - clock.now)
            let search = CacheDirTagSearch(depth: scope.tagDepth, timeLimit: left, skip: known).run(from: root)
            complete = complete && search.complete
            found += search.tagged.compactMap(DiscoveryPath.existingDirectory).map { path in
                // `fontconfig` for /var/cache/fontconfig, `proj-target` for ~/src/proj/target.
                let parent = PathResolver.parent(of: path), base = Self.nameSegment(PathResolver.lastComponent(path))
                let plain =
                    [root, "/var/cache"].contains(parent)
                    || [".cache", "cache"].contains(PathResolver.lastComponent(parent))
                let name = plain ? base : Self.nameSegment(PathResolver.lastComponent(parent)) + "-" + base
                return DiscoveredCache(
                    name: name, client: "CACHEDIR.TAG", path: path, profile: .generic, protect: ["/CACHEDIR.TAG"],
                    source: .tagged)
            }
        }
        return (found, complete)
    }

    /// `caches` without those that are, contain or lie inside one listed before them.
    static func withoutNesting(_ caches: [DiscoveredCache]) -> [DiscoveredCache] {
        var kept: [DiscoveredCache] = []
        for c in caches
        where !kept.contains(where: { PathResolver.isWithin(c.path, $0.path) || PathResolver.isWithin($0.path, c.path) }
        ) {
            kept.append(c)
        }
        return kept
    }

    private func isSelected(_ cache: DiscoveredCache) -> Bool {
        func matches(_ globs: [String]) -> Bool {
            let m = GlobMatcher(globs)
            // The path without its leading `/`, as the root of the globs: `/home/*/src/**` and `**/.cargo/**` match.
            return m.matches(Array(cache.name.utf8)) || m.matches(Array(cache.path.utf8.dropFirst()))
        }
        return (scope.include.isEmpty || matches(scope.include)) && !matches(scope.exclude)
    }

    /// A second cache of a name gets `-2`, a third `-3`, ….
    static func makeNamesUnique(_ caches: inout [DiscoveredCache]) {
        var used = Set<String>()
        for i in caches.indices {
            var name = caches[i].name, n = 1
            while used.contains(name) { n += 1; name = "\(caches[i].name)-\(n)" }
            used.insert(name)
            caches[i].name = name
        }
    }

    /// A path component as a config name: lowercase letters, digits, `_` and `-` (others become `-`).
    static func nameSegment(_ text: String) -> String {
        let mapped = text.lowercased().map { c -> Character in
            c.isASCII && (c.isLetter || c.isNumber || c == "_") ? c : "-"
        }
        let trimmed = String(mapped).trimmingCharacters(in: "-")
        return trimmed.isEmpty ? "cache" : trimmed
    }

    /// Why a found folder is not registered, before it is measured.
    private func problem(_ cache: DiscoveredCache, _ guardian: RootGuard) -> String? {
        if let home = scope.home?.home, scope.confineToHome, cache.source != .nginx,
            !PathResolver.isWithin(cache.path, home)
        {
            return "it leads outside \(home) (--home: only that home's own folders are registered)"
        }
        if case .refused(let why) = guardian.verdict(name: cache.name, path: cache.path, allowAnyPath: false) {
            return "CacheWarden refuses it: \(why)"
        }
        if !ProposedConfig.canWrite(cache.path) {
            return
                "its path has characters a config line cannot hold (a control character, `#` after a space, or spaces at an end)"
        }
        return nil
    }

    /// One-shot report of one cache, and its proposed quota.
    private func measure(_ cache: inout DiscoveredCache) {
        // A report enforces nothing, so a profile's idle deferral (which wants a quota) does not apply to it.
        var settings = cache.settings
        settings.trimAfterIdle = nil
        do throws(WardenError) {
            guard
                let status = try Watcher.report(
                    WardenSettings(directories: [settings]),
                    logger: Logger(label: "cachewarden.discover")
                ).first
            else { return }
            cache.total = status.totals.total
            cache.files = status.totals.files
            cache.oldest = status.oldest
            cache.filesystemSize = Self.filesystemSize(cache.path)
            cache.proposedQuota = rule.quota(size: cache.total, filesystem: cache.filesystemSize)
        } catch {
            cache.problem = "\(error)"
        }
    }

    private func groupFilesystemSize() -> Int64 { Self.filesystemSize(scope.home?.home ?? scope.systemRoot) }

    static func filesystemSize(_ path: String) -> Int64 {
        guard let vfs = try? Syscall.statfs(path) else { return 0 }
        return Int64(vfs.f_blocks) * Int64(vfs.f_frsize)
    }
}
