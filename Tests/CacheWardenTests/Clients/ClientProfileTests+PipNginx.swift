import Foundation
import Glibc
import Testing

/// pip and nginx against their profiles (the suite's other half; see ClientProfileTests.swift).
extension ClientProfileTests {
    // MARK: pip

    /// pip's HTTP cache watched with `profile = pip`, wheels from a local index: a wheel larger than the trim
    /// target is evicted alone (`"reason":"oversize"`) and the older, smaller entries stay, and pip uses them.
    @Test(
        .enabled(if: which("python3") != nil, "needs python3 (apt-get install python3)"),
        .enabled(if: pipExecutable() != nil, "needs pip (apt-get install python3-pip)"))
    func pipOversizeWheelIsEvictedAloneAndOlderWheelsStayCached() throws {
        let started = Date()
        let tree = TemporaryTree("cw-pip")
        let index = try PipIndex(
            tree, wheels: ["alpha": 1_100_000, "beta": 1_200_000, "huge": 5_000_000, "gamma": 1_300_000])
        defer { index.stop() }
        let cache = tree.url("pip-cache")
        tree.mkdir("pip-cache")
        // 8 MB quota, trims to 4 MB: the 5 MB wheel alone is larger than the target.
        let warden = try Warden(tree, "dir.pip.path = \(cache)\ndir.pip.profile = pip\ndir.pip.quota = 8MB\n")
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")
        // alpha, beta and huge fit (7.3 MB); gamma crosses the quota while huge is a complete entry.
        for name in ["alpha", "beta", "huge", "gamma"] {
            let r = try index.download([name], cache: cache, into: tree.url("dl-\(name)"))
            #expect(r.status == 0, "\(name): \(r.output)")
        }
        #expect(eventually { !warden.events("trim").isEmpty }, "no trim: \(diskTotals(cache).total) B on disk")
        let evictions = warden.events("evict")
        #expect(evictions.count == 1, "\(evictions)")
        #expect(evictions.first?["reason"] as? String == "oversize")
        #expect((evictions.first?["size"] as? Int ?? 0) >= 5_000_000)
        #expect(largestFile(in: cache) < 5_000_000, "the oversize entry is still on disk")

        // The older entries are still pip's cache: used, and not fetched again.
        let again = try index.download(["alpha", "beta", "gamma"], cache: cache, into: tree.url("dl-again"))
        #expect(again.status == 0, "\(again.output)")
        for name in ["alpha", "beta", "gamma"] {
            #expect(
                again.output.split(separator: "\n").contains {
                    $0.contains("Using cached") && $0.contains("/\(name)-1.0-py3-none-any.whl")
                },
                "\(again.output)")
            #expect(index.wheelGets(name) == 1, "\(name) fetched \(index.wheelGets(name)) times")
        }
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "pip: \(warden.events("trim").count) trims \(warden.events("trim").map { "\($0["total_before"] ?? 0) → \($0["total"] ?? 0)" }), evicted \(evictions.map { "\($0["size"] ?? 0) B \($0["reason"] ?? "")" }), \(seconds(since: started)) s"
        )
    }

    /// The common pip case: the large wheel is itself the download that crosses the quota. pip writes it as
    /// `<entry><random>.tmp` (protected by the profile, and being written), fsyncs it and renames it when complete;
    /// the quota is crossed by the temporary file, and (on a disk where fsync takes time) the trim runs before the
    /// rename. It must wait for the entry rather than evict every older one.
    @Test(
        .enabled(if: which("python3") != nil, "needs python3 (apt-get install python3)"),
        .enabled(if: pipExecutable() != nil, "needs pip (apt-get install python3-pip)"))
    func pipOversizeWheelThatItselfCrossesTheQuota() throws {
        let tree = TemporaryTree("cw-pip2")
        let index = try PipIndex(
            tree, wheels: ["alpha": 1_100_000, "beta": 1_200_000, "gamma": 1_300_000, "huge": 5_000_000])
        defer { index.stop() }
        let cache = tree.url("pip-cache")
        tree.mkdir("pip-cache")
        let warden = try Warden(tree, "dir.pip.path = \(cache)\ndir.pip.profile = pip\ndir.pip.quota = 8MB\n")
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")
        for name in ["alpha", "beta", "gamma", "huge"] {
            let r = try index.download([name], cache: cache, into: tree.url("dl-\(name)"))
            #expect(r.status == 0, "\(name): \(r.output)")
        }
        // The trim that ran while the large entry was still `*.tmp` waited for it (`held`); after the rename the
        // entry goes alone. Where the rename wins the race (fsync costs nothing), there is no held trim at all.
        #expect(
            eventually { warden.events("evict").contains { $0["reason"] as? String == "oversize" } },
            "no oversize eviction: \(warden.events("trim"))")
        let evictions = warden.events("evict")
        #expect(evictions.contains { ($0["size"] as? Int ?? 0) >= 5_000_000 }, "\(evictions)")
        #expect(!evictions.contains { $0["reason"] as? String == "quota" }, "older entries evicted: \(evictions)")
        let held = warden.events("trim").filter { $0["held"] as? Bool == true }
        if Self.trimRanBeforeTheRename(warden) {
            #expect(!held.isEmpty && held.allSatisfy { $0["removed"] as? Int == 0 }, "\(warden.events("trim"))")
        }
        #expect(largestFile(in: cache) < 5_000_000, "the oversize entry is still on disk")
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "pip, large wheel last: \(held.count) held trims, then \(evictions.map { "\($0["size"] ?? 0) B \($0["reason"] ?? "")" })"
        )
    }

    /// Whether the first trim line comes before the `write` line of the large entry under its final name.
    private static func trimRanBeforeTheRename(_ warden: Warden) -> Bool {
        let lines = warden.cli.lines
        let trim = lines.firstIndex { $0.contains("\"event\":\"trim\"") } ?? lines.count
        let renamed =
            lines.firstIndex { line in
                guard line.contains("\"event\":\"write\""),
                    let w = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                else { return false }
                return (w["size"] as? Int ?? 0) >= 5_000_000 && !((w["file"] as? String ?? "").hasSuffix(".tmp"))
            } ?? lines.count
        return trim < renamed
    }

    // MARK: nginx

    /// nginx's `proxy_cache_path` watched with `profile = nginx`: while trims delete cache files under nginx's
    /// feet, every response is still 200 with the right bytes, an evicted URL is simply a miss again, and a URL
    /// still cached is a hit.
    @Test(
        .enabled(if: nginxExecutable() != nil, "needs nginx (apt-get install nginx)"),
        .enabled(if: which("curl") != nil, "needs curl (apt-get install curl)"))
    func nginxServesEveryResponseWhileItsCacheIsTrimmed() throws {
        let started = Date()
        let tree = TemporaryTree("cw-nginx")
        tree.mkdir("www")
        let bodies = (0..<80).map { Data(randomBytes(60_000 + $0 * 100, seed: UInt64($0 + 1))) }
        for (i, body) in bodies.enumerated() { try body.write(to: URL(fileURLWithPath: tree.url("www/f\(i).bin"))) }
        let nginx = try NginxProxy(tree)
        defer { nginx.stop() }
        let warden = try Warden(
            tree, "dir.nginx.path = \(nginx.cache)\ndir.nginx.profile = nginx\ndir.nginx.quota = 2MB\n")
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")

        // 80 distinct URLs of 60–68 kB: about 5.4 MB through a 2 MB quota.
        for i in 0..<80 {
            let r = try nginx.fetch("/f\(i).bin", tree)
            #expect(r.code == 200 && r.body == bodies[i], "f\(i): \(r.code) \(r.cacheStatus)")
            #expect(r.cacheStatus == "MISS", "f\(i): \(r.cacheStatus)")
        }
        #expect(eventually { warden.events("trim").count >= 2 }, "trims: \(warden.events("trim").count)")
        // The newest entry is still cached: a hit.
        let hit = try nginx.fetch("/f79.bin", tree)
        #expect(
            hit.code == 200 && hit.cacheStatus == "HIT" && hit.body == bodies[79], "f79: \(hit.code) \(hit.cacheStatus)"
        )
        // The oldest were evicted while nginx's index still listed them: served again, from the upstream.
        for i in 0..<10 {
            let r = try nginx.fetch("/f\(i).bin", tree)
            #expect(r.code == 200 && r.body == bodies[i], "f\(i) again: \(r.code) \(r.cacheStatus)")
            #expect(r.cacheStatus == "MISS", "f\(i) again: \(r.cacheStatus)")
        }
        let evicted = warden.events("evict").compactMap { $0["file"] as? String }
        #expect(
            !evicted.contains { lastComponent($0).contains(".") },
            "a temporary file was evicted: \(evicted.filter { lastComponent($0).contains(".") })")
        #expect(nginx.seriousLogLines().isEmpty, "\(nginx.seriousLogLines())")
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "nginx: \(warden.events("trim").count) trims, \(evicted.count) evictions, trim durations \(warden.events("trim").compactMap { $0["duration_ms"] as? Double }) ms, \(seconds(since: started)) s"
        )
    }
}
