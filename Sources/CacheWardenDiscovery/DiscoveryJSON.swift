import CacheWarden
import FoundationEssentials

extension CacheDiscovery.Result {
    /// `discover --json`: one JSON document on one line, written by the event lines' writer:
    /// `{"caches":[{…},…],"group":{"name":"caches","quota":N},"tag_search_complete":true}` (see docs/discover.md).
    package func jsonLine(now: Date = Date()) -> String {
        var j = JSONLineBuilder()
        j.addObjects("caches", caches) { o, c in
            o.add("name", c.name)
            o.add("client", c.client)
            o.add("path", c.path)
            o.add("source", c.source.rawValue)
            o.add("profile", c.profile.rawValue)
            o.add("protect", c.protect)
            o.add("total", c.total)
            o.add("files", c.files)
            if let oldest = c.oldest { o.add("oldest_age_s", Int64(now.timeIntervalSince(oldest))) }
            o.add("fs_size", c.filesystemSize)
            o.add("proposed_quota", c.proposedQuota)
            o.add("problem", c.problem)
        }
        if let budget = groupBudget {
            var g = JSONLineBuilder(object: true)
            g.add("name", ProposedConfig.group)
            g.add("quota", budget)
            j.addRaw("group", g.finishObject())
        }
        j.add("tag_search_complete", tagSearchComplete)
        return String(decoding: j.finish(), as: UTF8.self)
    }
}
