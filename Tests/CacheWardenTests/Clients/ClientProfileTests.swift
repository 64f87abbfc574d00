import Foundation
import Glibc
import Testing

/// Each cache profile against its real client, as a black box: a config file with `dir.<name>.profile`, the
/// `cachewarden run` child, the client run for real (ccache and gcc, the Go toolchain, pip against a local index,
/// nginx as a caching proxy), and the outcome judged from the client's side (exit statuses, bytes served, hits)
/// and from the JSON lines. A test is skipped with a reason when its client is not installed.
@Suite(.serialized) struct ClientProfileTests {

    // MARK: ccache

    /// ccache with `CCACHE_DIR` watched: compiles keep working while trims run, ccache's settings, counters and
    /// tags are never evicted, the newest entries stay usable, and `ccache -s` still reads its counters.
    @Test(
        .enabled(if: which("ccache") != nil, "needs ccache (apt-get install ccache)"),
        .enabled(if: which("gcc") != nil, "needs gcc (apt-get install gcc)"))
    func ccacheCompilesThroughTrimsAndKeepsItsConfigStatsAndTags() throws {
        let started = Date()
        let tree = TemporaryTree("cw-ccache")
        let sources = CCache.writeSources(tree, count: 60)
        // Size one pass first, in a cache nobody watches.
        let measured = try CCache(tree.url("measure")).compile(sources, flags: ["-O0"], tree)
        #expect(measured.allSatisfy { $0.status == 0 }, "\(measured.first { $0.status != 0 }?.output ?? "")")
        let onePass = diskTotals(tree.url("measure")).total
        let ccache = CCache(tree.url("ccache"))
        tree.mkdir("ccache")
        #expect(try ccache.run(["-o", "max_size=5G"]).status == 0)
        let conf = try String(contentsOfFile: ccache.dir + "/ccache.conf", encoding: .utf8)
        let quota = onePass * 11 / 10
        let warden = try Warden(
            tree, "dir.ccache.path = \(ccache.dir)\ndir.ccache.profile = ccache\ndir.ccache.quota = \(quota)\n")
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")

        // Two passes: the second, with other flags, is all new entries and crosses the quota.
        var results = try ccache.compile(sources, flags: ["-O0"], tree)
        results += try ccache.compile(sources, flags: ["-O2"], tree)
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.first { $0.status != 0 }?.output ?? "")")
        #expect(
            eventually { !warden.events("trim").isEmpty },
            "no trim: quota \(quota), on disk \(diskTotals(ccache.dir).total)")
        // The newest entries survive the trims and are served as direct hits.
        let hitsBefore = try ccache.counter("direct_cache_hit")
        let again = try ccache.compile(Array(sources.suffix(10)), flags: ["-O2"], tree)
        #expect(again.allSatisfy { $0.status == 0 })
        // ccache 4: --print-stats
        if hitsBefore >= 0 { #expect(try ccache.counter("direct_cache_hit") - hitsBefore == 10) }

        try expectCCacheKeptItsOwnFiles(ccache, warden, conf: conf)
        let real = diskTotals(ccache.dir).total
        let sizeRun = try ccache.run(["-s"])
        #expect(sizeRun.status == 0, "ccache -s: \(sizeRun.output)")
        let reported = try #require(try ccache.reportedSize(), "no cache size in ccache's statistics")
        // ccache adds each entry's size to a counter when it stores it and subtracts only in its own cleanup; a
        // trim by someone else leaves the counter where it was, so until ccache's next cleanup `ccache -s` also
        // counts what was evicted (the README says so). Its cleanup recounts from the disk and agrees again:
        // ccache's own bookkeeping is not broken by the trims.
        #expect(try ccache.run(["-c"]).status == 0)
        let recounted = try #require(try ccache.reportedSize(), "no cache size in ccache's statistics after -c")
        #expect(
            recounted <= real + real / 4 && recounted >= real - real / 4,
            "ccache reports \(recounted) B after -c, the directory holds \(real) B")
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "ccache: one pass \(onePass) B, quota \(quota) B, \(results.count + again.count) compiles, \(warden.events("trim").count) trims, \(warden.events("evict").count) evictions, ccache reports \(reported) B before its recount and \(recounted) B after, for \(real) B on disk, \(seconds(since: started)) s"
        )
    }

    /// What the ccache profile protects is never an `evict` line and is still on disk with its content.
    private func expectCCacheKeptItsOwnFiles(_ ccache: CCache, _ warden: Warden, conf: String) throws {
        let evicted = warden.events("evict").compactMap { $0["file"] as? String }
        let kept = ["ccache.conf", "stats", "CACHEDIR.TAG"]
        #expect(
            !evicted.contains { kept.contains(lastComponent($0)) },
            "\(evicted.filter { kept.contains(lastComponent($0)) })")
        #expect((try? String(contentsOfFile: ccache.dir + "/ccache.conf", encoding: .utf8)) == conf)
        let written = Set(
            warden.events("write").compactMap { $0["file"] as? String }.filter { kept.contains(lastComponent($0)) })
        #expect(
            written.contains { lastComponent($0) == "stats" }
                && written.contains { lastComponent($0) == "CACHEDIR.TAG" })
        let missing = written.filter { !FileManager.default.fileExists(atPath: ccache.dir + "/" + $0) }
        #expect(missing.isEmpty, "gone: \(missing.sorted())")
    }

    // MARK: Go

    /// The Go build cache watched with `profile = go`: builds after an API change never fail, because trims wait
    /// until the cache is idle (`trim_after_idle`, set to 2 s here instead of the profile's 1 m so that the test
    /// takes seconds), and Go's own files stay.
    @Test(.enabled(if: which("go") != nil, "needs go (apt-get install golang-go)"))
    func goBuildsPassBecauseTrimsWaitUntilTheCacheIsIdle() throws {
        let started = Date()
        let tree = TemporaryTree("cw-go")
        let go = GoModule(tree)
        go.write(round: 0)
        let cold = try go.build()
        try #require(cold.status == 0, "cold build: \(cold.output)")
        let coldSize = diskTotals(go.cache).total
        let quota = coldSize * 13 / 10
        let hadTrimTxt = FileManager.default.fileExists(atPath: go.cache + "/trim.txt")
        let warden = try Warden(
            tree,
            """
            dir.go.path = \(go.cache)
            dir.go.profile = go
            dir.go.quota = \(quota)
            dir.go.trim_after_idle = 2s  # the profile says 1m; 2s keeps the test short
            """)
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")

        var windows: [(start: Date, end: Date)] = []
        var durations: [Double] = []
        for round in 1...4 {
            go.write(round: round) // Scale gains a parameter: every package above it is rebuilt
            let trimsBefore = warden.events("trim").count
            let start = Date()
            let r = try go.build()
            windows.append((start, Date()))
            durations.append(r.seconds)
            #expect(r.status == 0, "round \(round): \(r.output)")
            if diskTotals(go.cache).total > quota {
                #expect(
                    eventually(timeout: 20) { warden.events("trim").count > trimsBefore },
                    "round \(round): no deferred trim")
            }
        }
        let trims = warden.events("trim")
        #expect(!trims.isEmpty, "no trim: quota \(quota), cold build \(coldSize)")
        expectTrimsWaitedForIdle(warden, outside: windows)
        #expect(FileManager.default.fileExists(atPath: go.cache + "/README"))
        if hadTrimTxt { #expect(FileManager.default.fileExists(atPath: go.cache + "/trim.txt")) }
        let evicted = warden.events("evict").compactMap { $0["file"] as? String }
        #expect(!evicted.contains { ["README", "trim.txt", "testexpire.txt"].contains($0) })
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "go: cold build \(coldSize) B in \(String(format: "%.1f", cold.seconds)) s, quota \(quota) B, rounds \(durations.map { String(format: "%.1f", $0) }) s, \(trims.count) trims (deferred_s \(trims.compactMap { $0["deferred_s"] as? Double })), \(evicted.count) evictions, \(seconds(since: started)) s"
        )
    }

    /// Every trim waited for the cache to be idle (`deferred_s` ≥ the idle time) and no trim or eviction
    /// happened while a build was running.
    private func expectTrimsWaitedForIdle(_ warden: Warden, outside windows: [(start: Date, end: Date)]) {
        for trim in warden.events("trim") {
            #expect((trim["deferred_s"] as? Double ?? 0) >= 1.9, "not deferred: \(trim)")
        }
        for line in warden.events("trim") + warden.events("evict") {
            guard let at = eventTime(line) else { Issue.record("no time in \(line)"); continue }
            #expect(!windows.contains { $0.start < at && at < $0.end }, "during a build: \(line)")
        }
    }
}
