import CacheWarden
import CacheWardenDiscovery
import FoundationEssentials

/// The table `cachewarden discover` prints: one row per cache, then the group budget and notes.
enum DiscoveryTable {
    static func print(_ result: CacheDiscovery.Result, now: Date = Date()) {
        guard !result.caches.isEmpty else {
            Swift.print(
                "No cache found. Register a folder by hand: dir.<name>.path = /some/folder (see `man cachewarden.conf`)."
            )
            return
        }
        var rows = [["NAME", "PATH", "SIZE", "FILES", "OLDEST", "PROFILE", "QUOTA"]]
        for c in result.caches {
            rows.append([
                c.name, c.path, c.problem == nil ? ByteText.iec(c.total) : "?",
                c.problem == nil ? String(c.files) : "?",
                c.oldest.map { StatusCommand.age(now.timeIntervalSince($0)) } ?? "-",
                c.profile == .generic && !c.protect.isEmpty ? "generic+protect" : c.profile.rawValue,
                c.problem == nil ? ByteText.iec(c.proposedQuota) : "-",
            ])
        }
        let widths = (0..<rows[0].count).map { col in rows.map { $0[col].count }.max() ?? 0 }
        for row in rows {
            Swift.print(row.enumerated().map { StandardStreams.padded($1, to: widths[$0]) }.joined(separator: "  "))
        }
        if let budget = result.groupBudget {
            Swift.print("group \(ProposedConfig.group): \(ByteText.iec(budget)) shared by all of them")
        }
        for c in result.caches {
            if let problem = c.problem {
                Swift.print("skipped, not registered: \(c.name) (\(c.path)): \(problem)")
            } else if c.total > c.proposedQuota {
                Swift.print(
                    "note: \(c.name) is above its proposed quota; the first run would trim it to \(ByteText.iec(c.proposedQuota / 2))"
                )
            }
        }
        Swift.print("Write this as a config with --write FILE (yours: ~/.config/cachewarden/cachewarden.conf).")
    }
}
