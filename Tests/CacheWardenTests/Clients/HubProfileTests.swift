import Foundation
import Glibc
import Testing

/// The huggingface profile with the real huggingface_hub against a local stand-in for the hub: a repository folder
/// (`models--org--name`: its blobs, its snapshot links into them, its refs) goes whole, so a read after a trim
/// finds the repository complete or not at all — online it is downloaded again, offline (`HF_HUB_OFFLINE=1`) it is
/// a clean `LocalEntryNotFoundError` — and never reads other bytes or a dangling link.
@Suite(.serialized) struct HubProfileTests {
    @Test(.enabled(if: FakeHub.installed, "needs huggingface_hub (pip install huggingface_hub)"))
    func readsInALoopGetTheRightBytesOrACleanMissWhileTrimsRunBetweenThem() throws {
        let started = Date()
        let tree = TemporaryTree("cw-hub")
        let repos = (1...4).map { "org/m\($0)=config.json:300,weights.bin:\(60_000 + $0 * 10_000)" }
        let hub = try FakeHub(tree, repos: repos)
        defer { hub.stop() }
        let cache = tree.url("hub")
        let perRepo = 2 // files in each repository
        let files = 2 * perRepo * repos.count // each file by snapshot_download and by hf_hub_download
        let warm = try hub.read(cache: cache, offline: false)
        try #require(warm.reads?.ok == files, "first read: \(warm.result.output)")
        let total = diskTotals(cache).total
        let quota = total * 5 / 4
        let warden = try Warden(
            tree,
            "dir.hub.path = \(cache)\ndir.hub.profile = huggingface\ndir.hub.quota = \(quota)\ndir.hub.trim_after_idle = 1s\n"
        )
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")
        var reads = 0, misses = 0, bad: [String] = []
        let names = repos.map { String($0.prefix { $0 != "=" }) }
        func presentRepositories() -> Set<String> {
            Set(
                names.filter {
                    FileManager.default.fileExists(
                        atPath: cache + "/models--" + $0.replacingOccurrences(of: "/", with: "--"))
                })
        }
        // Each round reads offline (after the last trim: every file right, or a clean miss), then online (every
        // file right: what a trim took is downloaded again); other writes then push the cache over its quota.
        let under = try loopWithTrims(
            warden, cache: cache, quota: quota,
            round: { round in
                for offline in [true, false] {
                    let before = presentRepositories()
                    let r = try hub.read(cache: cache, offline: offline)
                    let after = presentRepositories()
                    reads += 1
                    // Exactly, per repository: one on disk reads every file right twice (snapshot_download, then
                    // hf_hub_download of each); offline, one a trim took misses once for the snapshot and once per
                    // file. (One a trim took during the read may be either, whole.)
                    let complete = ["ok": 2 * perRepo, "miss": 0], missed = ["ok": 0, "miss": 1 + perRepo]
                    let wrong = names.filter { repo in
                        let got = r.reads?.repos[repo]
                        if !offline { return got != complete }
                        if !before.contains(repo) { return got != missed }
                        return after.contains(repo) ? got != complete : got != complete && got != missed
                    }
                    guard let got = r.reads, got.wrong.isEmpty, got.error.isEmpty, wrong.isEmpty,
                        offline || got.ok == files
                    else {
                        bad.append("round \(round)\(offline ? " offline" : ""): \(r.result.output)")
                        continue
                    }
                    misses += got.miss
                }
            }, fill: { tree.write("hub/other-\($0)", size: Int(total / 2)) })
        #expect(under, "over quota a minute after the last read: \(diskTotals(cache).total) > \(quota)")
        let evicted = warden.events("evict").compactMap { $0["file"] as? String }
        #expect(evicted.contains { $0.hasPrefix("models--") }, "no trim took a repository: \(evicted)")
        #expect(misses > 0, "no offline read met a trimmed repository")
        #expect(bad.isEmpty, "\(bad.prefix(3))")
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "hub loop: \(clientLoops) rounds, \(reads) reads of \(repos.count) repositories, \(warden.events("trim").count) trims, \(evicted.filter { $0.hasPrefix("models--") }.count) repositories evicted, \(misses) clean offline misses, \(bad.count) bad reads, \(seconds(since: started)) s"
        )
    }
}
