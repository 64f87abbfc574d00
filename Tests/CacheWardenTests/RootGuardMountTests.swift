import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Identity, not spelling: a protected folder shown at an innocent path by a bind mount — the folder itself, a
/// folder holding it, or the whole tree (`mount --rbind /`) — is refused, even under `/tmp`, where any folder
/// would otherwise be a cache. Real mounts; the guard only judges (nothing here runs a trim on a system folder).
@Suite(.serialized, .enabled(if: mountUnavailable == nil, "needs root and the right to mount"))
struct RootGuardMountTests {
    /// Protected folders to show elsewhere: system folders, a home, a folder holding homes, and `/`.
    static func targets(home: String) -> [String] {
        ["/etc/ssh", "/etc", "/var/log", "/var/lib", "/usr/share", "/root", home, PathResolver.parent(of: home), "/"]
            .filter { FileManager.default.fileExists(atPath: $0) }
    }

    @Test func aProtectedFolderByAnotherPathIsRefusedInEveryForm() throws {
        let homes = TemporaryTree("cw-homes")
        homes.write("alice/.ssh/id_ed25519", size: 400)
        let home = homes.url("alice")
        let tree = TemporaryTree("cw-binds")
        var refused = 0, tried = 0
        for (i, target) in Self.targets(home: home).enumerated() {
            // 1. The folder itself at an innocent path.
            tree.mkdir("is\(i)")
            #expect(bindMount(target, at: tree.url("is\(i)")))
            // 2. A folder holding it.
            tree.mkdir("holds\(i)/inner")
            #expect(bindMount(target, at: tree.url("holds\(i)/inner")))
            defer { unmount(tree.url("is\(i)")); unmount(tree.url("holds\(i)/inner")) }
            // A guard reads the mount table when it is made (once per registration pass): after the mounts.
            let g = RootGuard.current(ownFiles: [], extraHomes: [home])
            for path in [tree.url("is\(i)"), tree.url("holds\(i)")] {
                tried += 1
                if case .refused = g.verdict(name: "c", path: path, allowAnyPath: false) {
                    refused += 1
                } else {
                    Issue.record("\(path), showing \(target), accepted")
                }
            }
        }
        // 3. Under a recursive bind mount of the whole tree: every protected folder is there again.
        tree.mkdir("everything")
        #expect(bindMount("/", at: tree.url("everything"), recursive: true))
        defer { unmount(tree.url("everything")) }
        let g = RootGuard.current(ownFiles: [], extraHomes: [home])
        for target in Self.targets(home: home) {
            let path = target == "/" ? tree.url("everything") : tree.url("everything") + target
            tried += 1
            guard case .refused(let why) = g.verdict(name: "c", path: path, allowAnyPath: false) else {
                Issue.record("\(path) accepted"); continue
            }
            refused += 1
            #expect(
                why.contains(" \(target),") || why.contains(" \(target) ") || why.contains("the filesystem root")
                    || why.contains("home directory"), "\(path): \(why)")
        }
        #expect(refused == tried && tried >= 24, "\(refused) of \(tried) refused")
        // What lies inside a protected folder shown under /tmp is no cache either: a bound home's Documents, and
        // under the whole tree, any folder outside the cache places.
        homes.mkdir("alice/Documents")
        let other = TemporaryTree("cw", under: TemporaryTree.outsideCachePlaces)
        other.mkdir("data")
        tree.mkdir("bound-home")
        #expect(bindMount(home, at: tree.url("bound-home")))
        defer { unmount(tree.url("bound-home")) }
        let fresh = RootGuard.current(ownFiles: [], extraHomes: [home])
        for path in [
            tree.url("bound-home/Documents"), tree.url("everything") + home + "/Documents",
            tree.url("everything") + other.url("data"),
        ] {
            #expect(fresh.verdict(name: "c", path: path, allowAnyPath: false) != .allowed, "\(path) accepted")
        }
        // A cache inside the home, seen through the recursive bind mount, is still a cache.
        homes.mkdir("alice/.cache/pip")
        #expect(
            g.verdict(name: "c", path: tree.url("everything") + home + "/.cache/pip", allowAnyPath: false) == .allowed)
    }

    /// The refusal says which path the folder also has, and `allow_any_path` is the only way out.
    @Test func theRefusalNamesTheOtherPath() throws {
        let tree = TemporaryTree("cw-binds")
        tree.mkdir("innocent")
        #expect(bindMount("/etc", at: tree.url("innocent")))
        defer { unmount(tree.url("innocent")) }
        tree.mkdir("holder/bound")
        let ssh = FileManager.default.fileExists(atPath: "/etc/ssh")
        if ssh { #expect(bindMount("/etc/ssh", at: tree.url("holder/bound"))) }
        defer { if ssh { unmount(tree.url("holder/bound")) } }
        let g = RootGuard.current(ownFiles: [])
        guard case .refused(let why) = g.verdict(name: "c", path: tree.url("innocent"), allowAnyPath: false) else {
            Issue.record("accepted"); return
        }
        #expect(why.contains("is /etc, a top-level system directory") || why.contains("is also /etc"), "\(why)")
        #expect(why.contains("dir.c.allow_any_path = true") && !why.contains("CACHEDIR.TAG"), "\(why)")
        if ssh {
            #expect(
                g.refusal(of: tree.url("holder"))?.reason
                    == "holds the mount \(tree.url("holder/bound")), which shows /etc/ssh, which is under /etc, a system directory"
            )
        }
    }

    /// `run` of a config naming a home shown at an innocent path deletes nothing there and says why.
    @Test func runRefusesAHomeBoundAtAnInnocentPath() throws {
        let tree = TemporaryTree("cw-binds")
        for i in 0..<10 { tree.write("home/decoy-\(i)", size: 10_000) }
        tree.write("home/.ssh/id_ed25519", size: 400)
        tree.mkdir("cache")
        #expect(bindMount(tree.url("home"), at: tree.url("cache")))
        defer { unmount(tree.url("cache")) }
        let before = DiskSnapshot(tree.url("home"))
        let config = tree.url("c.conf")
        try "size_basis = apparent\ndir.c.path = \(tree.url("cache"))\ndir.c.quota = 1KB\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        for command in [["check"], ["run"]] {
            let r = try runProcess(
                "/usr/bin/timeout", ["20", cachewardenBinary()] + command + ["-c", config],
                environment: ["HOME": tree.url("home")])
            #expect(
                r.status == 2 && r.err.contains("c.conf:2: dir.c.path: ") && r.err.contains("in $HOME"),
                "\(command): \(r)")
        }
        #expect(DiskSnapshot(tree.url("home")).changes(since: before).isEmpty)
    }
}
