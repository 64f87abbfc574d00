import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A report changes nothing on disk, whatever the directory's state: `status`, `check` and `clear --dry-run`,
/// and the library's observe mode.
@Suite struct ReadOnlyModeTests {
    /// Every regular file under `root` with its size and mtime: what "nothing changed" is checked against.
    static func snapshot(_ root: String) -> [String: String] {
        var out: [String: String] = [:]
        for f in ModelBasedTotalsTests.inventory(root).files {
            var st = stat()
            lstat(root + "/" + f, &st)
            out[f] = "\(st.st_size) \(st.st_mtim.tv_sec)"
        }
        return out
    }

    /// 40 files of 100 kB, three days old, in a directory with a 1 MB quota and a one-day max age: every policy
    /// would delete here.
    static func overQuotaAndExpired() throws -> (TemporaryTree, String) {
        let tree = TemporaryTree()
        let old = Date().timeIntervalSince1970 - 3 * 86_400
        for i in 0..<40 { tree.write("cache/f\(i)", size: 100_000, mtime: old + Double(i)) }
        let config = tree.url("cw.conf")
        try "dir.c.path = cache\ndir.c.quota = 1MB\ndir.c.max_age = 1d\ndir.new.path = not-yet\ndir.new.create = true\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        return (tree, config)
    }

    @Test func statusCheckAndClearDryRunChangeNothingOnDisk() throws {
        let (tree, config) = try Self.overQuotaAndExpired()
        let before = Self.snapshot(tree.url("cache"))
        #expect(before.count == 40)
        for args in [
            ["status", "--config", config], ["status", "--config", config, "--json"],
            ["check", "--config", config], ["clear", "--config", config, "--dry-run"],
        ] {
            let r = try runProcess(cachewardenBinary(), args)
            #expect(r.status == 0, "\(args): \(r.err)")
            #expect(Self.snapshot(tree.url("cache")) == before, "\(args) changed the directory")
            #expect(!tree.exists("not-yet"), "\(args) created a directory")
        }
        // The report still says what is there.
        let json = try runProcess(cachewardenBinary(), ["status", "--config", config, "--json"])
        let rows = json.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(rows.first?["files"] as? Int == 40)
        #expect(rows.last?["dir"] as? String == "new")
        #expect(rows.last?["files"] as? Int == 0)
    }

    @Test(.enabled(if: which("strace") != nil, "needs strace to see the system calls"))
    func statusNeedsNoInotifyWatches() throws {
        let (tree, config) = try Self.overQuotaAndExpired()
        let trace = tree.url("trace.txt")
        let strace = try #require(which("strace"))
        let r = try runProcess(
            strace,
            [
                "-f", "-qq", "-e", "trace=inotify_init1,inotify_add_watch,unlinkat,unlink",
                "-o", trace, cachewardenBinary(), "status", "--config", config,
            ])
        #expect(r.status == 0, "\(r.err)")
        let calls = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        #expect(!calls.contains("inotify"), "\(calls)")
        #expect(!calls.contains("unlink"), "\(calls)")
    }

    @Test func anObservingWatcherKeepsTotalsAndCannotDelete() throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("f\(i)", size: 10_000, mtime: 1_000_000 + Double(i)) }
        let log = EventLog()
        let settings = WardenSettings(
            directories: [DirectorySettings(name: "c", path: tree.path, quota: 20_000, maxAge: 60)],
            sizeBasis: .apparent)
        let watcher = Watcher(settings: settings, mode: .observe) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        tree.write("new", size: 5000)
        #expect(eventually { watcher.totals().first?.total == 105_000 })
        #expect(throws: WardenError.readOnly) { try watcher.trim("c", to: 0) }
        #expect(throws: WardenError.readOnly) { try watcher.clear() }
        #expect(log.trims.isEmpty && log.evictions.isEmpty)
        #expect(ModelBasedTotalsTests.inventory(tree.path).files.count == 11)
    }
}
