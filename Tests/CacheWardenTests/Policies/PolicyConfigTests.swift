import Foundation
import Testing
@testable import CacheWarden

/// Every key of the second round of policies in the config file, in `check`, with reload and with a dry run.
@Suite struct PolicyConfigTests {
    let tree = TemporaryTree()

    func parse(_ text: String) throws -> WardenSettings {
        try WardenSettings.parse(text, source: "p.conf", relativeTo: tree.path)
    }

    func error(_ text: String) -> String {
        do { _ = try parse(text); return "no error" } catch { return "\(error)" }
    }

    @Test func everyKeyParsesIntoTheSettings() throws {
        tree.mkdir("a")
        tree.mkdir("b")
        let s = try parse(
            """
            group.disk.quota = 10GB
            group.disk.trim_to = 60%
            dir.a.path = a
            dir.a.quota = 1GB
            dir.a.trim_to = 400MB
            dir.a.trim_at = 90%
            dir.a.trim_after_idle = 5m
            dir.a.hard_quota = 150%
            dir.a.max_files = 100000
            dir.a.min_age = 10m
            dir.a.spare_open = false
            dir.a.evict_unit = depth:2
            dir.a.count_directories = true
            dir.a.group = disk
            dir.a.weight = 3
            dir.a.delete_rate = 500/s
            dir.b.path = b
            dir.b.group = disk
            dir.b.profile = ccache
            """)
        let a = s.directories[0], b = s.directories[1].resolved()
        #expect(a.trimTo == .bytes(400_000_000) && a.trimAt == .percent(90))
        #expect(a.trimAfterIdle == 300 && a.hardQuota == .percent(150) && a.maxFiles == 100_000 && a.minAge == 600)
        #expect(!a.spareOpen && a.evictUnit == .depth(2) && a.countDirectories && a.group == "disk" && a.weight == 3)
        #expect(a.deleteRate == 500)
        #expect(s.groups == [GroupSettings(name: "disk", quota: 10_000_000_000, trimTo: .percent(60))])
        #expect(b.profile == .ccache && b.protect.contains("ccache.conf") && b.protect.contains("stats"))
    }

    @Test func badValuesAndBadCombinationsNameTheLine() {
        tree.mkdir("a")
        let base = "dir.a.path = a\ndir.a.quota = 1GB\n"
        let cases: [(String, String)] = [
            (base + "dir.a.trim_to = 150%\n", "p.conf:3: bad value `150%` for dir.a.trim_to"),
            (base + "dir.a.hard_quota = 50%\n", "p.conf:3: bad value `50%` for dir.a.hard_quota"),
            (base + "dir.a.evict_unit = depth:0\n", "p.conf:3: bad value `depth:0` for dir.a.evict_unit"),
            (
                base + "dir.a.profile = emacs\n",
                "p.conf:3: bad value `emacs` for dir.a.profile: expected generic, ccache, go, pip, nginx, bazel"
            ),
            (base + "dir.a.delete_rate = fast\n", "p.conf:3: bad value `fast` for dir.a.delete_rate"),
            (
                base + "dir.a.trim_to = 95%\ndir.a.trim_at = 90%\n",
                "p.conf:3: dir.a.trim_to (95%) must be below dir.a.trim_at (90%)"
            ),
            (base + "dir.a.group = nope\n", "p.conf:3: dir.a.group names nope, but there is no group.nope.quota"),
            (base + "group.g.quota = 1GB\n", "p.conf:3: group.g has no member"),
            (
                "dir.a.path = a\ndir.a.trim_after_idle = 1m\n",
                "p.conf:2: dir.a.trim_after_idle defers quota trims, but dir.a.quota is not set"
            ),
            (base + "group.g.trim_to = 50%\ndir.a.group = g\n", "p.conf:3: group.g has no quota"),
        ]
        for (text, expected) in cases {
            let e = error(text)
            #expect(e.hasPrefix(expected), "\(e)")
            #expect(!e.contains("\n"))
        }
    }

    /// `evict_pointers` names the folders that hold pointers (`false`: none; `true` says nothing of where), and
    /// `check` warns when it is set without units; uv's profile sets uv's three and its pointer files.
    @Test func evictPointersNamesFoldersAndCheckWarnsWithoutUnits() throws {
        tree.mkdir("a")
        let base = "dir.a.path = a\ndir.a.quota = 1GB\n"
        let s = try parse(base + "dir.a.evict_unit = depth:2\ndir.a.evict_pointers = wheels-v*, env/**\n")
        #expect(s.directories[0].evictPointers == ["wheels-v*", "env/**"] && s.keyWarnings.isEmpty)
        #expect(
            try parse(base + "dir.a.profile = uv\ndir.a.evict_pointers = false\n").directories[0].resolved()
                .evictPointers.isEmpty)
        #expect(
            error(base + "dir.a.evict_pointers = true\n").hasPrefix(
                "p.conf:3: bad value `true` for dir.a.evict_pointers: expected the folders"))
        let unitless = try parse(base + "dir.a.evict_pointers = wheels-v*\n")
        #expect(
            unitless.keyWarnings.count == 1
                && unitless.keyWarnings[0].contains("dir.a.evict_pointers does nothing with evict_unit = file"))
        let uv = try parse(base + "dir.a.profile = uv\n").directories[0].resolved()
        #expect(
            uv.evictPointers == ["wheels-v*", "sdists-v*", "environments-v*"]
                && uv.pointerExtensions == ["rev", "http", "msgpack", "whl"])
    }

    @Test func aProfileFillsWhatIsNotGivenAndCheckSaysWhere() throws {
        tree.mkdir("gocache")
        let file = tree.url("go.conf")
        try "dir.go.path = gocache\ndir.go.quota = 2GB\ndir.go.profile = go\ndir.go.protect = README, mine/**\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let settings = try WardenSettings.load(configFile: file).resolved()
        let go = settings.directories[0]
        #expect(go.order == .opened && go.trimAfterIdle == 60 && go.hardQuota == .percent(200))
        #expect(go.protect == ["README", "mine/**"], "the explicit key overrides the profile's")
        let r = try runProcess(cachewardenBinary(), ["check", "--config", file])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("dir.go.order = opened  # from profile go"))
        #expect(r.out.contains("dir.go.trim_after_idle = 60s  # from profile go"))
        #expect(r.out.contains("dir.go.protect = README, mine/**\n"), "an explicit key is not marked")
        #expect(r.out.contains("dir.go.hard_quota = 200%"))
    }

    @Test func reloadAppliesANewTrimToAtOnce() throws {
        for i in 0..<10 { tree.write("c/f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        var dir = DirectorySettings(name: "c", path: tree.url("c"), quota: 200_000)
        let log = EventLog()
        let watcher = Watcher(settings: WardenSettings(directories: [dir], sizeBasis: .apparent)) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        dir.trimAt = .percent(40) // 100 kB > 40 % of 200 kB: trims at once, to 20 kB
        dir.trimTo = .percent(10)
        try watcher.reload(WardenSettings(directories: [dir], sizeBasis: .apparent))
        #expect(eventually { !log.trims.isEmpty }, "events reach the callback on its own queue")
        #expect(log.trims.first?.target == 20_000)
        #expect(watcher.totals()[0].total <= 20_000)
    }

    @Test func aDryRunOfMaxFilesReportsAndDeletesNothing() throws {
        for i in 0..<12 { tree.write("d/f\(i)", size: 10, mtime: 1_000_000 + Double(i)) }
        var dir = DirectorySettings(name: "d", path: tree.url("d"))
        dir.maxFiles = 10
        let log = EventLog()
        let watcher = Watcher(settings: WardenSettings(directories: [dir], sizeBasis: .apparent), mode: .dryRun) {
            log.append($0)
        }
        try watcher.start()
        defer { watcher.stop() }
        #expect(eventually { !log.trims.isEmpty })
        #expect(log.trims[0].reason == .maxFiles && log.trims[0].dryRun && log.trims[0].removed == 7)
        #expect(diskTotals(tree.url("d")).files == 12)
    }
}
