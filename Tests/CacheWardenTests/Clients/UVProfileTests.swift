import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The `uv` profile with the real uv: a trim takes unpacked wheels (`archive-v0/<id>/`) whole and leaves uv's own
/// files, so that a new venv installs complete packages — an evicted wheel is a clean miss, fetched again.
@Suite(.serialized) struct UVProfileTests {
    @Test func aTrimTakesWholeWheelsAndUvStillInstallsCompletePackages() throws {
        let work = TemporaryTree("cw-uvwork"), cache = TemporaryTree("cw-uvcache")
        let names = ["w1", "w2", "w3", "w4", "w5", "w6"]
        let index = try PipIndex(
            work,
            wheels: KeyValuePairs(
                dictionaryLiteral: ("w1", 60_000), ("w2", 60_000), ("w3", 60_000),
                ("w4", 60_000), ("w5", 60_000), ("w6", 60_000)))
        defer { index.stop() }
        let uv = try #require(
            DiscoverRealClientsTests.uvExecutable(), "uv is missing: pip install uv (.ci/deps.sh does)")
        func uvRun(_ args: [String]) throws -> ClientResult {
            try runClient(
                uv, args, dropping: ["UV_", "XDG_"],
                setting: [
                    "UV_CACHE_DIR": cache.path, "UV_NO_CONFIG": "1",
                    "UV_PYTHON_DOWNLOADS": "never",
                ].merging(noProxy) { a, _ in a })
        }
        func install(into venv: String, offline: Bool = false) throws -> ClientResult {
            let made = try uvRun(["venv", "-q", "--python", which("python3")!, venv])
            try #require(made.status == 0, "\(made.output)")
            return try uvRun(
                [
                    "pip", "install", "-q", "--python", venv + "/bin/python", "--index-url",
                    "http://127.0.0.1:\(index.port)/simple/",
                ] + (offline ? ["--offline"] : []) + names)
        }
        let first = try install(into: work.url("venv1"))
        try #require(first.status == 0, "\(first.output)")
        try FileManager.default.removeItem(atPath: work.url("venv1")) // its hard links would keep the bytes
        let before = DiskSnapshot(cache.path)
        let links = Self.symlinks(in: before)
        let total = diskTotals(cache.path, basis: .apparent).total

        let h = try WatcherHarness(cache, quota: total * 3 / 4, basis: .apparent) {
            $0.profile = .uv
            $0.trimAfterIdle = nil // the profile waits a quiet minute; this test has no client running meanwhile
        }
        #expect(eventually { !h.log.trims.isEmpty && h.totalsMatchDisk(basis: .apparent, timeout: 1) })
        let evicted = h.log.evictions.filter { $0.files != nil }.map(\.file)
        let pointerLines = h.log.evictions.filter { $0.files == nil }.map { cache.url($0.file) }
        // Units are the folders two deep (`archive-v0/<id>`, `simple-v28/index`, …), and unpacked wheels went.
        #expect(
            evicted.allSatisfy { $0.split(separator: "/").count == 2 }
                && evicted.contains { $0.hasPrefix("archive-v0/") }, "\(evicted)")
        // uv's own files stayed, and every file that went was in an evicted unit, or was one of its pointers (a
        // symlink into it, or a file named after such a link: `evict_pointers`): nothing half deleted.
        let after = DiskSnapshot(cache.path)
        for kept in ["CACHEDIR.TAG", ".gitignore", ".lock"] {
            #expect(after.entries[cache.url(kept)] != nil, "\(kept) was deleted")
        }
        // (What waits in CacheWarden's trash has left the client's view already.)
        let changed = before.changes(since: after).filter {
            after.entries[$0].map { $0[0] & Int64(S_IFMT) != Int64(S_IFDIR) } ?? true
        }
        .filter { !PathResolver.isWithin($0, cache.url(TrashFolder.name)) }
        let units = evicted.map { cache.url($0) }
        #expect(
            changed.allSatisfy { path in
                units.contains { PathResolver.isWithin(path, $0) }
                    || [path, URL(fileURLWithPath: path).deletingPathExtension().path].contains {
                        links[$0].map { t in units.contains { PathResolver.isWithin(t, $0) } } ?? false
                    }
            }, "\(changed)")
        // Each pointer that went (a link or a file named after one) has its evict line: the lines are what went.
        let outsideUnits = changed.filter { path in !units.contains { PathResolver.isWithin(path, $0) } }
        #expect(Set(pointerLines) == Set(outsideUnits), "lines \(pointerLines), gone \(outsideUnits)")
        h.watcher.stop()

        let offline = try install(into: work.url("venv2"), offline: true)
        #expect(
            offline.status != 0, "offline, an evicted wheel is a clean miss, not a broken install: \(offline.output)")
        let again = try install(into: work.url("venv3"))
        try #require(again.status == 0, "\(again.output)")
        // Every package is complete in the new venv (the wheels' modules are random bytes: compared by size).
        let site = try runProcess(
            work.url("venv3/bin/python"), ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        let purelib = site.out.trimmingCharacters(in: .whitespacesAndNewlines)
        for name in names {
            let size =
                (try? FileManager.default.attributesOfItem(atPath: "\(purelib)/\(name)/__init__.py")[.size] as? Int)
                ?? nil
            #expect(size == 60_001, "\(name) in the new venv: \(size.map(String.init) ?? "missing")")
        }
        print(
            "uv: \(total) B cache, quota \(total * 3 / 4) B, \(evicted.count) units evicted whole (\(evicted.filter { $0.hasPrefix("archive-v0/") }.count) unpacked wheels), \(names.map(index.wheelGets).reduce(0, +)) wheel downloads in all"
        )
    }

    /// Every symlink of a snapshot, with where it leads (resolved by name, not followed).
    static func symlinks(in snapshot: DiskSnapshot) -> [String: String] {
        var links: [String: String] = [:]
        for (path, entry) in snapshot.entries where entry[0] & Int64(S_IFMT) == Int64(S_IFLNK) {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) else { continue }
            links[path] =
                URL(fileURLWithPath: target, relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent())
                .absoluteURL.standardized.path
        }
        return links
    }
}
