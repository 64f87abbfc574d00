import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Units with read-only folders, as a user's daemon meets them (Go's module cache makes every folder `0555`): a
/// unit whose folders are the user's own is evicted and really deleted (the trash sets their write bit back); a
/// unit holding a folder of another user that the daemon cannot write is never moved, so no `evict` line claims
/// bytes that would stay in the trash.
@Suite(.serialized) struct ReadOnlyUnitTests {
    @Test(.enabled(if: AsNobody.unavailable == nil, "runs the daemon as user nobody: needs root and setpriv"))
    func readOnlyFoldersOfTheUserGoAndAFolderNobodyMayEmptyStays() throws {
        let user = try AsNobody()
        let cache = "home/.cache/app"
        for unit in 0..<4 {
            for f in 0..<3 { user.tree.write("\(cache)/u\(unit)/pkg/sub/f\(f)", size: 10_000, mtime: 1_000_000) }
        }
        user.tree.write("\(cache)/v/mine/f", size: 10_000, mtime: 900_000)
        user.tree.write("\(cache)/v/roots/f", size: 10_000, mtime: 900_000)
        let config = user.tree.url("home/c.conf")
        try
            "size_basis = apparent\ndir.c.path = \(user.tree.url(cache))\ndir.c.quota = 200000\ndir.c.evict_unit = entry\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        try user.handOver()
        // `v/roots` stays root's and closed to others' writes; the u units' folders inside are made
        // read-only (a unit's own folder must stay writable: moving a folder to another parent rewrites its `..`).
        #expect(
            chown(user.tree.url("\(cache)/v/roots"), 0, 0) == 0 && chmod(user.tree.url("\(cache)/v/roots"), 0o755) == 0)
        for unit in 0..<4 {
            for folder in ["pkg/sub", "pkg"] {
                #expect(chmod(user.tree.url("\(cache)/u\(unit)/\(folder)"), 0o555) == 0)
            }
        }
        let daemon = try user.start(["run", "-c", config])
        #expect(eventually { daemon.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(daemon.stderr)")
        // 140 kB counted; a write of 70 kB crosses the 200 kB quota: trim to 100 kB, oldest first.
        user.tree.write("\(cache)/new", size: 70_000)
        #expect(chown(user.tree.url("\(cache)/new"), AsNobody.uid, AsNobody.uid) == 0)
        #expect(eventually { daemon.lines.contains { $0.contains("\"event\":\"trim\"") } }, "\(daemon.stderr)")
        let trash = user.tree.url("\(cache)/\(TrashFolder.name)")
        #expect(eventually { ((try? FileManager.default.contentsOfDirectory(atPath: trash)) ?? []).isEmpty })
        let evicted = daemon.lines.filter { $0.contains("\"event\":\"evict\"") }
        #expect(!evicted.contains { $0.contains("\"file\":\"v\"") }, "\(evicted)")
        let kept = daemon.lines.filter { $0.contains("\"kind\":\"unit_kept\"") }
        #expect(kept.contains { $0.contains("\"file\":\"v\"") && $0.contains("can neither write") }, "\(kept)")
        #expect(user.tree.exists("\(cache)/v/mine/f") && user.tree.exists("\(cache)/v/roots/f"))
        let gone = (0..<4).filter { !user.tree.exists("\(cache)/u\($0)") }
        #expect(gone.count == evicted.count && !gone.isEmpty, "evicted \(evicted), gone \(gone)")
        #expect(daemon.interrupt() == 0, "\(daemon.stderr)")
        print("ReadOnlyUnitTests: \(gone.count) read-only units evicted and deleted; the unit nobody may empty stays")
    }
}
