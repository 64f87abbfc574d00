import Foundation
import Glibc
import Testing

/// The cargo profile with the real cargo against a local sparse registry: `cargo build --offline` in a loop, each
/// into a fresh target folder, while `cachewarden run` trims `CARGO_HOME/registry` between the builds. cargo needs
/// a crate's `.crate` for an offline build even when its extracted `src/` folder is there ("attempting to make an
/// HTTP request, but --offline was specified"), and extracts a missing `src/` folder again from the `.crate`: so a
/// trim takes extracted folders, never a `.crate` nor the index.
@Suite(.serialized) struct CargoProfileTests {
    @Test(.enabled(if: CargoRegistry.cargo != nil, "needs cargo (rustup, or apt-get install cargo)"))
    func offlineBuildsPassInALoopWhileTrimsRunBetweenThem() throws {
        let started = Date()
        let tree = TemporaryTree("cw-cargo")
        let size = 120_000
        let registry = try CargoRegistry(tree, crates: 4, size: size)
        defer { registry.stop() }
        let fetched = try registry.run(["fetch"])
        try #require(fetched.status == 0, "cargo fetch: \(fetched.output)")
        let first = try registry.buildOffline("target", expected: 4 * size)
        try #require(first.result.status == 0 && first.right, "first build: \(first.result.output)")
        let warm = diskTotals(registry.registry).total
        let quota = warm * 5 / 4
        let warden = try Warden(
            tree,
            """
            dir.cargo.path = \(registry.registry)
            dir.cargo.profile = cargo
            dir.cargo.quota = \(quota)
            dir.cargo.trim_after_idle = 1s
            """)
        try #require(warden.waitUntilReady(), "no ready line: \(warden.cli.stderr)")
        var builds = 0, failures: [String] = []
        // Other writes (another project's downloads) push the registry over its quota after each build.
        let under = try loopWithTrims(
            warden, cache: registry.registry, quota: quota,
            round: { round in
                let b = try registry.buildOffline("target", expected: 4 * size)
                builds += 1
                if b.result.status != 0 || !b.right { failures.append("round \(round): \(b.result.output)") }
            }, fill: { tree.write("cargo-home/registry/other-\($0)", size: Int(warm / 2)) })
        #expect(under, "over quota a minute after the last build: \(diskTotals(registry.registry).total) > \(quota)")
        let evicted = warden.events("evict").compactMap { $0["file"] as? String }
        #expect(evicted.contains { $0.hasPrefix("src/") }, "no trim took an extracted crate: \(evicted)")
        #expect(!evicted.contains { $0.hasPrefix("cache/") || $0.hasPrefix("index/") }, "\(evicted)")
        let last = try registry.buildOffline("target", expected: 4 * size)
        #expect(last.result.status == 0 && last.right, "after the last trim: \(last.result.output)")
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(warden.events("error").isEmpty, "\(warden.events("error"))")
        #expect(warden.stop() == 0)
        print(
            "cargo loop: \(clientLoops) rounds, \(builds + 1) offline builds, \(warden.events("trim").count) trims, \(evicted.filter { $0.hasPrefix("src/") }.count) extracted crates evicted, \(failures.count) failed, quota \(quota) B, \(seconds(since: started)) s"
        )
    }
}
