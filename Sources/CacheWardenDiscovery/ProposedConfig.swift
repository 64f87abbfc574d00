import CacheWarden
import FoundationEssentials

/// The config `discover --write` proposes: a commented `key = value` file registering every measured cache with
/// its tool's profile and its proposed quota, all in one group. Paths under `tildeHome` are written as `~/…` (the
/// home of whoever runs the watcher); every `$` is doubled, so that no path is read as a variable.
package struct ProposedConfig: Sendable {
    package var result: CacheDiscovery.Result
    package var rule: QuotaRule
    /// Where the caches were searched, for the header.
    package var searched: String
    /// Paths under this folder are written as `~/…` (nil: absolute paths only, as for another user's home).
    package var tildeHome: String?
    package var now: Date = Date()
    /// The folders the service that will run this config may delete in (its unit's `ReadWritePaths=`); a cache
    /// elsewhere gets a note saying how to add it. Nil: no notes (the config is for another user's service).
    package var serviceWritable: [String]?
    package static let group = "caches"

    /// The user unit's `ReadWritePaths=` (Examples/systemd/user/cachewarden.service) for `home`.
    package static func userUnitWritable(home: String) -> [String] {
        [".cache", ".npm", ".cargo/registry", ".gradle/caches", ".local/share/pnpm"].map {
            PathResolver.absolute($0, relativeTo: home)
        }
    }

    /// The system unit's `ReadWritePaths=` (Examples/systemd/cachewarden.service).
    package static let systemUnitWritable = ["/var/cache", "/root/.cache"]

    package init(result: CacheDiscovery.Result, rule: QuotaRule, searched: String, tildeHome: String?) {
        self.result = result
        self.rule = rule
        self.searched = searched
        self.tildeHome = tildeHome
    }

    package var text: String {
        var lines = header
        let measured = result.caches.filter { $0.problem == nil }
        if let budget = result.groupBudget {
            lines += ["group.\(Self.group).quota = \(Self.size(budget))", ""]
        }
        for c in measured { lines += block(c) + [""] }
        for c in result.caches where c.problem != nil {
            let shown = String(c.path.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
            lines.append("# not registered: \(c.name) at \(shown): \(c.problem ?? "")")
        }
        if measured.isEmpty {
            lines.append("# No cache was found: this file registers nothing (`cachewarden check` accepts it).")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private var header: [String] {
        let date = RFC3339.format(secondsSince1970: now.timeIntervalSince1970).prefix(10) // YYYY-MM-DD, UTC
        let share = { (x: Double) in "\(Int((x * 100).rounded())) %" }
        return [
            "# CacheWarden config written by `cachewarden discover` on \(date), for the caches found in \(searched).",
            "#",
            "# Each cache has its tool's profile and a proposed quota: \(rule.growth)× its size today, at least \(Self.size(rule.floor)),",
            "# at most \(share(rule.cacheShare)) of its filesystem. Crossing a quota trims that cache, oldest files first, to half",
            "# of it. They all share the group `\(Self.group)`, whose budget is the sum of their quotas, at most \(share(rule.groupShare)) of",
            "# the filesystem; a group trim keeps each cache's rules (whole folders, waiting for its tool to be idle).",
            "# Change any value; the keys are in `man cachewarden.conf`.",
            "#",
            "# Check it:  cachewarden check --config FILE",
            "# Run it:    systemctl --user enable --now cachewarden   (as root: systemctl enable --now cachewarden)",
            "",
        ]
    }

    private func block(_ c: DiscoveredCache) -> [String] {
        let key = "dir.\(c.name)."
        var about = "# \(c.client): \(ByteText.iec(c.total)) in \(c.files) \(c.files == 1 ? "file" : "files") today"
        if let oldest = c.oldest { about += ", oldest \(Self.days(now.timeIntervalSince(oldest)))" }
        var lines = [about]
        if c.total > c.proposedQuota {
            lines.append("# Above its quota today: the first run trims it to \(ByteText.iec(c.proposedQuota / 2)).")
        }
        if let writable = serviceWritable, !writable.contains(where: { PathResolver.isWithin(c.path, $0) }) {
            let edit = tildeHome == nil ? "systemctl edit cachewarden" : "systemctl --user edit cachewarden"
            lines.append("# Outside the service's writable folders: add `ReadWritePaths=\(c.path)` with `\(edit)`.")
        }
        lines.append(key + "path = " + written(c.path))
        if c.profile != .generic { lines.append(key + "profile = " + c.profile.rawValue) }
        if !c.protect.isEmpty { lines.append(key + "protect = " + c.protect.joined(separator: ", ")) }
        lines.append(key + "quota = " + Self.size(c.proposedQuota))
        if c.joinsGroup && result.groupBudget != nil { lines.append(key + "group = " + Self.group) }
        return lines
    }

    /// Whether `path` can be a config value that reads back as itself: no control character (a newline would
    /// start a new key), no `#` after whitespace (a comment), no whitespace at either end (trimmed).
    package static func canWrite(_ path: String) -> Bool {
        guard let first = path.first, let last = path.last, !first.isWhitespace, !last.isWhitespace else {
            return false
        }
        if path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return false }
        return !path.contains(" #") && !path.contains("\t#")
    }

    /// `path` as the parser reads it back: `~/…` under `tildeHome`, each `$` doubled.
    func written(_ path: String) -> String {
        var p = path
        if let home = tildeHome, home != "/", PathResolver.isWithin(path, home) {
            p = path == home ? "~" : "~/" + path.dropFirst(home.count).drop { $0 == "/" }
        }
        return PathExpansion.escapingDollars(p)
    }

    /// A size in whole GiB or MiB (quotas are whole steps of 64 MiB).
    static func size(_ bytes: Int64) -> String {
        let mib: Int64 = 1 << 20
        if bytes % (1024 * mib) == 0 { return "\(bytes / (1024 * mib))GiB" }
        if bytes % mib == 0 { return "\(bytes / mib)MiB" }
        return "\(bytes)B"
    }

    static func days(_ seconds: Double) -> String {
        let d = Int(max(0, seconds) / 86_400)
        return d == 0 ? "less than a day" : d == 1 ? "1 day" : "\(d) days"
    }
}
