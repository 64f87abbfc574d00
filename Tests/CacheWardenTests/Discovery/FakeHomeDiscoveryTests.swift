import Foundation
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenDiscovery

/// Every known cache laid out in a fake home as its tool lays it out: each is found where the tool puts it (and
/// where its variables move it), with its profile, and the proposed config reads back as the same settings.
@Suite struct FakeHomeDiscoveryTests {
    /// Known cache name → its folder under the home, with the tool's default variables unset.
    static let defaults: [(String, String, CacheProfile)] = [
        ("pip", ".cache/pip", .pip), ("uv", ".cache/uv", .uv), ("go", ".cache/go-build", .go),
        ("ccache", ".cache/ccache", .ccache), ("sccache", ".cache/sccache", .sccache),
        ("huggingface", ".cache/huggingface/hub", .huggingface), ("npm", ".npm/_cacache", .npm),
        ("yarn", ".cache/yarn", .generic), ("pnpm", ".local/share/pnpm/store", .generic),
        ("cargo", ".cargo/registry", .cargo), ("gradle", ".gradle/caches/build-cache-1", .generic),
        ("chromium", ".cache/chromium/Default/Cache/Cache_Data", .generic),
        ("chromium-2", ".cache/chromium/Profile 1/Cache/Cache_Data", .generic),
        ("chrome", ".cache/google-chrome/Default/Cache/Cache_Data", .generic),
        ("firefox", ".cache/mozilla/firefox/ab12.default-release/cache2", .generic),
        ("thumbnails", ".cache/thumbnails", .generic), ("bazel", ".cache/bazel-disk", .bazel),
    ]

    static func fakeHome() -> TemporaryTree {
        let home = TemporaryTree("cw-home")
        for (i, (_, folder, _)) in defaults.enumerated() { home.write(folder + "/entry\(i)", size: 1000 * (i + 1)) }
        home.writeText(".bazelrc", "build --disk_cache=~/.cache/bazel-disk\n")
        home.writeText("src/proj/target/CACHEDIR.TAG", CacheDirTag.signature + "\n# cargo\n")
        home.write("src/proj/target/debug/app", size: 5000)
        home.writeText("src/fake/CACHEDIR.TAG", "Signature: 0000 not the real one\n")
        return home
    }

    static func discover(
        _ home: TemporaryTree, env: [String: String] = [:], _ adjust: (inout DiscoveryScope) -> Void = { _ in }
    ) -> CacheDiscovery.Result {
        let real = try! Syscall.canonicalPath(home.path)
        var scope = DiscoveryScope(home: CacheLocations(home: real, environment: env))
        adjust(&scope)
        return CacheDiscovery(scope: scope).run()
    }

    @Test func eachKnownCacheIsFoundWhereItsToolPutsItWithItsProfile() throws {
        let home = Self.fakeHome(), real = try Syscall.canonicalPath(home.path)
        let result = Self.discover(home)
        let byName = Dictionary(uniqueKeysWithValues: result.caches.map { ($0.name, $0) })
        for (name, folder, profile) in Self.defaults {
            let c = try #require(byName[name], "\(name) not found")
            #expect(c.path == real + "/" + folder && c.profile == profile && c.source == .known && c.problem == nil)
            #expect(
                c.files == 1 && c.total > 0
                    && c.proposedQuota == QuotaRule().quota(size: c.total, filesystem: c.filesystemSize))
        }
        let tagged = try #require(byName["proj-target"])
        #expect(
            tagged.path == real + "/src/proj/target" && tagged.source == .tagged && tagged.protect == ["/CACHEDIR.TAG"]
                && tagged.files == 2)
        #expect(
            result.caches.count == Self.defaults.count + 1, "the bad signature is no tag: \(result.caches.map(\.path))")
        #expect(result.tagSearchComplete)
        // Every cache joins the group, those whose profile deletes whole folders or waits for idle too: a group
        // trim keeps their rules.
        let members = result.caches.filter(\.joinsGroup).map(\.name)
        #expect(
            Set(members).isSuperset(of: ["uv", "go", "sccache", "huggingface", "cargo", "bazel"])
                && members.contains("pip"))
        #expect(result.groupBudget == result.caches.filter(\.joinsGroup).map(\.proposedQuota).reduce(0, +))
    }

    @Test func theToolsVariablesAndXDGMoveTheCachesAndRelativeValuesAreIgnored() throws {
        let home = Self.fakeHome(), elsewhere = TemporaryTree("cw-elsewhere")
        for folder in ["gocache", "pipc", "uvc", "hfhub", "ccachec", "xdg/sccache", "npmc/_cacache", "cargoh/registry"]
        {
            elsewhere.write(folder + "/f", size: 10)
        }
        let e = try Syscall.canonicalPath(elsewhere.path)
        let env = [
            "GOCACHE": e + "/gocache", "PIP_CACHE_DIR": e + "/pipc", "UV_CACHE_DIR": e + "/uvc",
            "HF_HUB_CACHE": e + "/hfhub",
            "CCACHE_DIR": e + "/ccachec", "XDG_CACHE_HOME": e + "/xdg", "npm_config_cache": e + "/npmc",
            "CARGO_HOME": e + "/cargoh", "GRADLE_USER_HOME": "relative/gradle",
        ]
        let byName = Dictionary(uniqueKeysWithValues: Self.discover(home, env: env).caches.map { ($0.name, $0.path) })
        #expect(byName["go"] == e + "/gocache" && byName["pip"] == e + "/pipc" && byName["uv"] == e + "/uvc")
        #expect(
            byName["huggingface"] == e + "/hfhub" && byName["ccache"] == e + "/ccachec"
                && byName["sccache"] == e + "/xdg/sccache")
        #expect(byName["npm"] == e + "/npmc/_cacache" && byName["cargo"] == e + "/cargoh/registry")
        #expect(
            byName["gradle"] == (try Syscall.canonicalPath(home.path)) + "/.gradle/caches/build-cache-1",
            "a relative GRADLE_USER_HOME is no path")
        #expect(byName["thumbnails"] == nil, "XDG_CACHE_HOME moved ~/.cache away")
        let off = Self.discover(home, env: ["GOCACHE": "off"]).caches.map(\.name)
        #expect(!off.contains("go"))
    }

    @Test func includeExcludeDepthAndTheTimeLimitScopeTheSearch() {
        let home = Self.fakeHome()
        #expect(Self.discover(home) { $0.include = ["pip", "**/.cargo/**"] }.caches.map(\.name) == ["pip", "cargo"])
        let excluded = Self.discover(home) {
            $0.exclude = ["chrom*", "*target*", (try! Syscall.canonicalPath(home.path)) + "/.cache/go-*"]
        }
        .caches.map(\.name)
        #expect(
            !excluded.contains { $0.hasPrefix("chrom") || $0.hasSuffix("target") || $0 == "go" }
                && excluded.contains("pip"))
        #expect(
            !Self.discover(home) { $0.tagDepth = 2 }.caches.contains { $0.source == .tagged },
            "src/proj/target is 3 deep")
        #expect(Self.discover(home) { $0.tagDepth = 3 }.caches.contains { $0.source == .tagged })
        let stopped = Self.discover(home) { $0.tagTimeLimit = .zero }
        #expect(!stopped.tagSearchComplete && !stopped.caches.contains { $0.source == .tagged })
    }

    @Test func theSearchFollowsNoSymlinkAndATaggedFolderInsideAKnownCacheIsNotASecondRoot() throws {
        let home = Self.fakeHome(), outside = TemporaryTree("cw-outside")
        outside.writeText("tagged/CACHEDIR.TAG", CacheDirTag.signature)
        symlink(outside.path, home.url("link"))
        home.writeText(".cache/uv/CACHEDIR.TAG", CacheDirTag.signature) // uv tags its own cache
        let result = Self.discover(home)
        #expect(!result.caches.contains { $0.path.hasPrefix(try! Syscall.canonicalPath(outside.path)) })
        #expect(result.caches.filter { $0.path.hasSuffix("/.cache/uv") }.map(\.source) == [.known])
    }

    @Test func theProposedConfigReadsBackAsTheDiscoveredSettings() throws {
        let home = Self.fakeHome(), real = try Syscall.canonicalPath(home.path)
        home.write("dollar$HOME dir/CACHEDIR.TAG", size: 0)
        home.writeText("dollar$HOME dir/CACHEDIR.TAG", CacheDirTag.signature)
        let result = Self.discover(home)
        for tilde in [real, nil] as [String?] {
            let text = ProposedConfig(result: result, rule: QuotaRule(), searched: real, tildeHome: tilde).text
            #expect(text.contains(tilde == nil ? "= \(real)/.cache/pip\n" : "= ~/.cache/pip\n"))
            var parser = ConfigFileParser(file: "proposed.conf")
            parser.locations = DefaultLocations(environment: ["HOME": real], euid: 1000)
            let settings = try parser.parse(text, baseDirectory: "/")
            #expect(settings.directories.map(\.name) == result.caches.map(\.name))
            #expect(settings.directories.map(\.path) == result.caches.map(\.path))
            #expect(settings.directories.map(\.quota) == result.caches.map(\.proposedQuota))
            #expect(settings.directories.map(\.profile) == result.caches.map(\.profile))
            #expect(settings.directories.map { $0.group != nil } == result.caches.map(\.joinsGroup))
            #expect(settings.groups.map(\.quota) == [result.groupBudget!])
        }
    }

    /// The caches with the most to lose from a careless trim — whole folders (uv, cargo, Hugging Face), an idle wait
    /// (Go) — share the one budget with pip and ccache: the proposed config puts every one in the group.
    @Test func everyProposedCacheIsAMemberOfTheGroup() throws {
        let home = TemporaryTree("cw-home"), real = try Syscall.canonicalPath(home.path)
        let folders = [
            "uv": ".cache/uv", "cargo": ".cargo/registry", "huggingface": ".cache/huggingface/hub",
            "go": ".cache/go-build", "pip": ".cache/pip", "ccache": ".cache/ccache",
        ]
        for (i, folder) in folders.values.sorted().enumerated() { home.write(folder + "/entry", size: 1000 * (i + 1)) }
        let result = Self.discover(home)
        #expect(Set(result.caches.map(\.name)) == Set(folders.keys) && result.caches.allSatisfy { $0.problem == nil })
        let text = ProposedConfig(result: result, rule: QuotaRule(), searched: real, tildeHome: real).text
        var parser = ConfigFileParser(file: "proposed.conf")
        parser.locations = DefaultLocations(environment: ["HOME": real], euid: 1000)
        let settings = try parser.parse(text, baseDirectory: "/")
        #expect(
            settings.groups.map(\.name) == [ProposedConfig.group] && settings.groups.first?.quota == result.groupBudget)
        #expect(
            Set(settings.directories.filter { $0.group == ProposedConfig.group }.map(\.name)) == Set(folders.keys),
            "\(text)")
        let resolved = Dictionary(uniqueKeysWithValues: settings.directories.map { ($0.name, $0.resolved()) })
        #expect(
            ["uv", "cargo", "huggingface"].allSatisfy { resolved[$0]?.evictUnit != .file }
                && resolved["go"]?.trimAfterIdle != nil)
        #expect(!text.contains("except caches"), "the old exclusion is gone from the file's header")
    }

    @Test func discoveryChangesNothingOnDisk() throws {
        let home = Self.fakeHome()
        let before = DiskSnapshot(home.path)
        _ = Self.discover(home)
        #expect(DiskSnapshot(home.path).changes(since: before) == [])
    }

    /// Hostile homes: a tagged folder whose name would inject config lines, a cache linked out of another user's
    /// home, a FIFO for `.bazelrc`: none is registered, the file reads back as what was found, nothing hangs.
    @Test func hostileNamesLinksOutOfTheHomeAndAFIFOAreNotRegistered() throws {
        let home = Self.fakeHome(), outside = TemporaryTree("cw-outside")
        let real = try Syscall.canonicalPath(home.path)
        home.writeText("evil\ndir.e.path = /etc\n/CACHEDIR.TAG", CacheDirTag.signature)
        home.writeText("x #y/CACHEDIR.TAG", CacheDirTag.signature)
        try FileManager.default.removeItem(atPath: home.url(".cache/pip"))
        outside.write("pipdata", size: 10)
        symlink(outside.path, home.url(".cache/pip"))
        try FileManager.default.removeItem(atPath: home.url(".bazelrc"))
        #expect(mkfifo(home.url(".bazelrc"), 0o600) == 0)
        let result = Self.discover(home) { $0.confineToHome = true }
        let problems = Dictionary(
            uniqueKeysWithValues: result.caches.filter { $0.problem != nil }.map { ($0.path, $0.problem!) })
        #expect(problems[try Syscall.canonicalPath(outside.path)]?.contains("leads outside") == true, "\(problems)")
        #expect(problems.keys.contains { $0.contains("\n") } && problems.keys.contains { $0.hasSuffix("x #y") })
        #expect(!result.caches.contains { $0.name == "bazel" })
        let text = ProposedConfig(result: result, rule: QuotaRule(), searched: real, tildeHome: nil).text
        var parser = ConfigFileParser(file: "proposed.conf")
        parser.locations = DefaultLocations(environment: ["HOME": real], euid: 1000)
        let settings = try parser.parse(text, baseDirectory: "/")
        #expect(settings.directories.map(\.path) == result.caches.filter { $0.problem == nil }.map(\.path))
        #expect(!settings.directories.contains { $0.path == "/etc" })
    }
}

/// `discover` never proposes a path CacheWarden would refuse (`RootGuard`): a tool's variable pointing at the home
/// itself or at a system folder, or a cache holding the config file being written, is listed with the reason.
@Suite struct DiscoveryRefusalTests {
    @Test func refusedPathsAreNotProposed() throws {
        let home = FakeHomeDiscoveryTests.fakeHome(), real = try Syscall.canonicalPath(home.path)
        let env = ["CCACHE_DIR": real, "PIP_CACHE_DIR": "/usr/share/doc"]
        let result = FakeHomeDiscoveryTests.discover(home, env: env) {
            $0.configFile = real + "/.cache/uv/cachewarden.conf"
        }
        let byName = Dictionary(uniqueKeysWithValues: result.caches.map { ($0.name, $0) })
        for (name, reason) in [
            ("pip", "/usr/share/doc is under /usr, a system directory"), ("uv", "holds CacheWarden's own config file"),
        ] {
            let c = try #require(byName[name], "\(name) not listed")
            #expect(
                c.problem?.hasPrefix("CacheWarden refuses it: ") == true && c.problem?.contains(reason) == true,
                "\(name): \(c.problem ?? "")")
        }
        // The home as ccache's folder holds caches found before it: dropped as nesting, or refused; never proposed.
        #expect(byName["ccache"].map { $0.problem?.contains("is the home directory searched") == true } ?? true)
        let proposed = ProposedConfig(result: result, rule: QuotaRule(), searched: real, tildeHome: nil).text
        for path in [real, "/usr/share/doc", real + "/.cache/uv"] {
            #expect(!proposed.contains("path = \(path)\n"), "\(path) proposed")
        }
        #expect(proposed.contains("path = \(real)/.cache/go-build\n"), "\(proposed)")
    }

    /// A tool's setting pointing at a folder that is no cache (Bazel's `--disk_cache=~/.ssh`) gives a listed row
    /// with the reason, never a registered one; the table says it was skipped.
    @Test func aBazelDiskCacheInSshIsListedNotProposed() throws {
        let home = FakeHomeDiscoveryTests.fakeHome(), real = try Syscall.canonicalPath(home.path)
        home.writeText(".bazelrc", "build --disk_cache=~/.ssh\n")
        home.writeText(".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
        let result = FakeHomeDiscoveryTests.discover(home)
        let bazel = try #require(result.caches.first { $0.name == "bazel" }, "not listed: \(result.caches.map(\.name))")
        #expect(bazel.path == real + "/.ssh")
        #expect(
            bazel.problem?.contains("\(real)/.ssh is not in a cache place") == true, "\(bazel.problem ?? "no problem")")
        #expect(
            !ProposedConfig(result: result, rule: QuotaRule(), searched: real, tildeHome: nil).text.contains(
                "path = \(real)/.ssh"))
        let table = try runProcess(cachewardenBinary(), ["discover", "--home", real])
        #expect(
            table.out.contains("skipped, not registered: bazel (\(real)/.ssh): CacheWarden refuses it"), "\(table.out)")
    }

    /// Every folder `discover` knows as a tool's cache lies in a cache place (`CachePlaces`), for a home with and
    /// without the tools' variables: what `discover` proposes, `check` accepts, and the two tables cannot drift.
    @Test func everyKnownToolCacheIsInACachePlace() {
        let home = "/home/zoe"
        let variables = [
            "XDG_CACHE_HOME": "/x/cache", "PIP_CACHE_DIR": "/x/pip", "UV_CACHE_DIR": "/x/uv", "GOCACHE": "/x/go",
            "CCACHE_DIR": "/x/ccache", "SCCACHE_DIR": "/x/sccache", "HF_HOME": "/x/hf", "npm_config_cache": "/x/npm",
            "YARN_CACHE_FOLDER": "/x/yarn", "npm_config_store_dir": "/x/pnpm", "CARGO_HOME": "/x/cargo",
            "GRADLE_USER_HOME": "/x/gradle", "XDG_DATA_HOME": "/x/data",
        ]
        for environment in [
            [:], variables, ["HF_HUB_CACHE": "/y/hub", "NPM_CONFIG_CACHE": "/y/npm", "XDG_DATA_HOME": "/y/data"],
        ] {
            let places = CachePlaces(
                homes: [.init(owner: "of user zoe", path: home)],
                environment: DefaultLocations(environment: environment, euid: 1000))
            let locations = CacheLocations(home: home, environment: environment)
            let paths = KnownCaches.user.flatMap { $0.locate(locations) }
            #expect(paths.count >= 12)
            for path in paths { #expect(places.place(of: path) != nil, "\(path) with \(environment)") }
        }
    }
}
