import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// uv's pointers and its archives (`evict_pointers` in the uv profile): uv unpacks each wheel into
/// `archive-v0/<id>/` and points at it from `wheels-v8/…` (a symlink, with a `.rev` or `.http` file beside it),
/// from `sdists-v11/…` (a wheel it built) and from `environments-v2/…` (`uv run`, `uvx`). A trim must never leave a
/// pointer to an archive it deleted: uv 0.13.9 follows a `.rev` without looking and fails the install. Every way a
/// user installs is run for real, after trims and in a loop with trims between the runs.
@Suite(.serialized) struct UVPointerTests {
    @Test(.enabled(if: UVClient.executable != nil, "needs uv (pip install uv; .ci/deps.sh does)"))
    func everyInstallWaySucceedsAfterATrimTookItsArchives() throws {
        let work = TemporaryTree("cw-uvptr"), cache = TemporaryTree("cw-uvptrcache")
        let uv = try UVClient(work, cache: cache.path, wheels: 6, size: 60_000)
        defer { uv.index.stop() }
        for way in UVClient.Way.allCases {
            let r = try uv.install(way, venv: "warm-\(way.rawValue)")
            try #require(r.result.status == 0 && r.missing.isEmpty, "\(way.rawValue): \(r.result.output) \(r.missing)")
        }
        for way in UVClient.Way.allCases {
            try? FileManager.default.removeItem(atPath: work.url("warm-\(way.rawValue)"))
        }
        let total = diskTotals(cache.path, basis: .apparent).total
        let h = try WatcherHarness(cache, quota: total / 2, basis: .apparent) {
            $0.profile = .uv
            $0.trimAfterIdle = nil // the profile waits a quiet minute; nothing runs meanwhile here
        }
        #expect(eventually { !h.log.trims.isEmpty && h.totalsMatchDisk(basis: .apparent, timeout: 1) })
        let evicted = h.log.evictions.filter { $0.files != nil }.map(\.file) // units (their pointers have lines too)
        h.watcher.stop()
        #expect(evicted.filter { $0.hasPrefix("archive-v0/") }.count >= 4, "\(evicted)")
        #expect(
            Self.danglingPointers(cache.path).isEmpty,
            "pointers left to deleted archives: \(Self.danglingPointers(cache.path))")
        var failed: [String] = []
        for way in UVClient.Way.allCases {
            let r = try uv.install(way, venv: "after-\(way.rawValue)")
            if r.result.status != 0 || !r.missing.isEmpty {
                failed.append("\(way.rawValue): \(r.result.output) \(r.missing)")
            }
        }
        #expect(failed.isEmpty, "\(failed)")
        print(
            "uv pointers: \(total) B cache, quota \(total / 2) B, \(evicted.count) units evicted (\(evicted.filter { $0.hasPrefix("archive-v0/") }.count) archives with their pointers), \(UVClient.Way.allCases.count) ways installed again, \(failed.count) failed"
        )
    }

    /// The loop of the issue: every way installs again and again from a warm cache into fresh venvs, other writes
    /// push the cache over its quota after each round, and `cachewarden run` (profile uv, `trim_after_idle = 1s`)
    /// trims between the runs. No run fails, no venv misses a file of its RECORD, and the cache is back under its
    /// quota within a minute of the last run.
    @Test(.enabled(if: UVClient.executable != nil, "needs uv (pip install uv; .ci/deps.sh does)"))
    func installsInALoopWhileTrimsRunBetweenThem() throws {
        let started = Date()
        let work = TemporaryTree("cw-uvloop"), cache = TemporaryTree("cw-uvloopcache")
        let uv = try UVClient(work, cache: cache.path, wheels: 6, size: 60_000)
        defer { uv.index.stop() }
        for way in UVClient.Way.allCases { _ = try uv.install(way, venv: "warm") }
        let warm = diskTotals(cache.path).total
        let quota = warm * 5 / 4
        let warden = try Warden(
            work,
            "dir.uv.path = \(cache.path)\ndir.uv.profile = uv\ndir.uv.quota = \(quota)\ndir.uv.trim_after_idle = 1s\n")
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")
        var runs = 0, failures: [String] = [], incomplete: [String] = []
        // Other writes push the cache over its quota after each round; the trim waits for a quiet second, then
        // takes the oldest units — the archives this round used among them.
        let under = try loopWithTrims(
            warden, cache: cache.path, quota: quota,
            round: { round in
                for way in UVClient.Way.allCases {
                    let r = try uv.install(way, venv: "venv")
                    runs += 1
                    if r.result.status != 0 { failures.append("round \(round) \(way.rawValue): \(r.result.output)") }
                    if !r.missing.isEmpty { incomplete.append("round \(round) \(way.rawValue): \(r.missing)") }
                }
            }, fill: { cache.write("filler-v0/\($0)", size: Int(warm / 2)) })
        #expect(under, "over quota a minute after the last run: \(diskTotals(cache.path).total) > \(quota)")
        let archives = warden.events("evict").filter { ($0["file"] as? String)?.hasPrefix("archive-v0/") == true }.count
        #expect(archives > 0, "no trim took an archive: the loop did not test what it is for")
        #expect(Self.danglingPointers(cache.path).isEmpty, "\(Self.danglingPointers(cache.path))")
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(incomplete.isEmpty, "\(incomplete.prefix(3))")
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "uv loop: \(clientLoops) rounds, \(runs) runs, \(warden.events("trim").count) trims, \(archives) archives evicted, \(failures.count) failed runs, \(incomplete.count) incomplete venvs, quota \(quota) B, \(seconds(since: started)) s"
        )
    }

    /// The symlinks outside `archive-v0/` that lead nowhere (uv's pointers to deleted archives).
    static func danglingPointers(_ cache: String) -> [String] {
        var dangling: [String] = []
        let walker = FileManager.default.enumerator(atPath: cache)
        while let name = walker?.nextObject() as? String {
            guard !name.hasPrefix("archive-v0/"), !name.hasPrefix(TrashFolder.name) else { continue }
            var st = stat()
            let path = cache + "/" + name
            if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFLNK, stat(path, &st) != 0 { dangling.append(name) }
        }
        return dangling
    }
}
