import Foundation
import Testing
@testable import CacheWarden
@testable import CacheWardenDiscovery

/// The pure parts of discovery: the quota rule, names, nesting, and reading `.bazelrc` and nginx's configuration.
@Suite struct DiscoveryRulesTests {
    static let gib: Int64 = 1 << 30, mib: Int64 = 1 << 20

    @Test func aQuotaIsOneAndAHalfTimesTheSizeBetweenTheFloorAndATenthOfTheFilesystem() {
        let rule = QuotaRule(), disk = 250 * Self.gib
        #expect(rule.quota(size: 0, filesystem: disk) == Self.gib) // the floor
        #expect(rule.quota(size: 700 * Self.mib, filesystem: disk) == 1088 * Self.mib) // 1050 MiB up to a 64 MiB step
        #expect(rule.quota(size: 4 * Self.gib, filesystem: disk) == 6 * Self.gib)
        #expect(rule.quota(size: 40 * Self.gib, filesystem: disk) == 25 * Self.gib) // the cap: a tenth of the disk
        // On a small disk the cap wins over the floor, and it is a whole step, at least one.
        #expect(rule.quota(size: 0, filesystem: 4 * Self.gib) == 384 * Self.mib)
        #expect(rule.quota(size: 10 * Self.gib, filesystem: 100 * Self.mib) == 64 * Self.mib)
        for i in 0..<66 {
            let size = Int64(i) * 777 * Self.mib
            let q = rule.quota(size: size, filesystem: disk)
            #expect(q % rule.step == 0 && q <= disk / 10 && q >= min(Self.gib, disk / 10))
        }
    }

    @Test func theGroupBudgetIsTheSumOfQuotasAtMostAQuarterOfTheFilesystem() {
        let rule = QuotaRule()
        #expect(rule.groupBudget(quotas: [Self.gib, 2 * Self.gib], filesystem: 250 * Self.gib) == 3 * Self.gib)
        #expect(
            rule.groupBudget(quotas: [25 * Self.gib, 25 * Self.gib, 25 * Self.gib], filesystem: 100 * Self.gib) == 25
                * Self.gib)
    }

    @Test func namesBecomeConfigNamesAndRepeatsGetANumber() throws {
        #expect(CacheDiscovery.nameSegment("Profile 1") == "profile-1")
        #expect(CacheDiscovery.nameSegment("my.proj") == "my-proj")
        #expect(CacheDiscovery.nameSegment("..") == "cache")
        #expect(CacheDiscovery.nameSegment("Ünï") == "n")
        var caches = ["chromium", "chromium", "pip", "chromium"].map {
            DiscoveredCache(name: $0, client: $0, path: "/x/" + $0, profile: .generic, protect: [], source: .known)
        }
        CacheDiscovery.makeNamesUnique(&caches)
        #expect(caches.map(\.name) == ["chromium", "chromium-2", "pip", "chromium-3"])
        for c in caches { #expect(ConfigFileParser.isValidName(c.name)) }
    }

    @Test func aFolderThatNestsWithOneFoundBeforeIsDropped() {
        let caches = ["/h/.cache/uv", "/h/.cache", "/h/.cache/uv/sub", "/h/.cache/uvx", "/h/proj/target"].map {
            DiscoveredCache(name: "n", client: "c", path: $0, profile: .generic, protect: [], source: .tagged)
        }
        #expect(
            CacheDiscovery.withoutNesting(caches).map(\.path) == ["/h/.cache/uv", "/h/.cache/uvx", "/h/proj/target"])
    }

    @Test func bazelrcDiskCacheInBothFormsWithTildeAndWithoutWorkspacePaths() {
        let text = """
            build --disk_cache=~/.cache/bazel-disk   # mine
            test --disk_cache /srv/bazel
            # build --disk_cache=/commented
            build --disk_cache=%workspace%/cache
            build --remote_cache=grpc://x --disk_cache="/quoted/path"
            """
        #expect(
            BazelRC.diskCaches(in: text, home: "/home/u") == [
                "/home/u/.cache/bazel-disk", "/srv/bazel", "/quoted/path",
            ])
    }

    @Test func nginxCachePathsFollowIncludesRelativeToTheMainFile() throws {
        let tree = TemporaryTree("cw-nginx")
        tree.writeText(
            "nginx.conf",
            """
            user www-data;
            http {
                include conf.d/*.conf;   # relative to the main file's folder
                proxy_cache_path /var/cache/nginx/main levels=1:2 keys_zone=main:10m;
                # proxy_cache_path /commented keys_zone=x:1m;
                include /nonexistent/*.conf;
            }
            """)
        tree.writeText("conf.d/a.conf", "fastcgi_cache_path \"/srv/fcgi cache\" keys_zone=f:1m; include ../nginx.conf;")
        tree.writeText(
            "conf.d/b.conf", "server { location / { proxy_cache main; } }\nuwsgi_cache_path relative/uw keys_zone=u:1m;"
        )
        let found = NginxConfig.cachePaths(mainFile: tree.url("nginx.conf"))
        #expect(found == ["/srv/fcgi cache", tree.url("relative/uw"), "/var/cache/nginx/main"])
    }
}

extension TemporaryTree {
    /// Writes `text` to `relative` (creating its folders).
    func writeText(_ relative: String, _ text: String) {
        mkdirs(PathResolver.parent(of: url(relative)))
        _ = FileManager.default.createFile(atPath: url(relative), contents: Data(text.utf8))
    }
}
