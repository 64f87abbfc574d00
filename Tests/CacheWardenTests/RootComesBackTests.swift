import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A root that comes back is checked again: taken back only when the guard accepts it again and it is on the
/// filesystem and mount it was registered on; otherwise it stays lost, with an `error` line saying why, and
/// `status` shows it as lost. And with `one_file_system`, no mount inside a root is entered, nor deleted in — a
/// bind mount of the same filesystem included. Real mounts, real deletions, decoys counted before and after.
@Suite(.serialized, .enabled(if: mountUnavailable == nil, "needs root and the right to mount"))
struct RootComesBackTests {
    /// A daemon on `tree/cache` (quota 1 KB, so anything taken back would be trimmed at once) with a control
    /// socket, and `$HOME` at `tree/home`, which holds decoys.
    struct Daemon {
        let tree: TemporaryTree
        let cli: RunningCLI
        var socket: String { tree.url("cw.sock") }

        init(_ tree: TemporaryTree, extra: String = "") throws {
            self.tree = tree
            let config = tree.url("c.conf")
            try
                ("size_basis = apparent\ncontrol_socket = \(tree.url("cw.sock"))\ndir.c.path = \(tree.url("cache"))\n"
                + "dir.c.quota = 1KB\n" + extra).write(toFile: config, atomically: true, encoding: .utf8)
            cli = try RunningCLI(["run", "-c", config], environment: ["HOME": tree.url("home")])
            #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(cli.stderr)")
        }

        func errors(_ kind: String) -> [String] {
            cli.lines.filter { $0.contains("\"event\":\"error\"") && $0.contains("\"kind\":\"\(kind)\"") }
        }

        func status() throws -> [String: Any] {
            let r = try runProcess(cachewardenBinary(), ["status", "--control-socket", socket, "--json"])
            return (try? JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]) ?? [:]
        }
    }

    static func decoys(_ tree: TemporaryTree) {
        for i in 0..<20 { tree.write("home/notes/n\(i).txt", size: 2000, mtime: 1_500_000_000 + Double(i)) }
        tree.write("home/.ssh/id_ed25519", size: 400, mtime: 1_400_000_000)
    }

    @Test func aLostRootBackAsABindMountOfAHomeIsNotTakenBack() throws {
        let tree = TemporaryTree("cw-back")
        Self.decoys(tree)
        tree.write("cache/a", size: 500)
        let d = try Daemon(tree)
        let before = DiskSnapshot(tree.url("home"))
        tree.remove("cache")
        #expect(eventually { d.errors("root_lost").count == 1 }, "\(d.cli.stdout)")
        tree.mkdir("cache")
        #expect(bindMount(tree.url("home"), at: tree.url("cache")))
        defer { unmount(tree.url("cache")) }
        #expect(eventually { d.errors("root_refused").count == 1 }, "\(d.cli.stdout)")
        let line = try #require(d.errors("root_refused").first)
        #expect(line.contains("is the home directory in $HOME") && line.contains("not taken back"), "\(line)")
        let status = try d.status()
        #expect(
            (status["lost"] as? String)?.contains("is the home directory in $HOME") == true
                && status["total"] as? Int == 0, "\(status)")
        #expect(d.cli.interrupt() == 0)
        #expect(DiskSnapshot(tree.url("home")).changes(since: before).isEmpty)
        #expect(d.errors("root_refused").count == 1, "said once")
        #expect(!d.cli.stdout.contains("\"event\":\"evict\""))
    }

    @Test func aMountPointRootUnmountedIsNotTakenBackAsTheFolderBeneath() throws {
        let tree = TemporaryTree("cw-back")
        for i in 0..<30 { tree.write("cache/hidden-\(i)", size: 2000, mtime: 1_500_000_000 + Double(i)) }
        let before = DiskSnapshot(tree.url("cache"))
        #expect(mount("tmpfs", tree.url("cache"), "tmpfs", 0, "size=1m") == 0)
        var mounted = true
        defer { if mounted { unmount(tree.url("cache")) } }
        tree.write("cache/on-the-tmpfs", size: 100)
        let d = try Daemon(tree)
        unmount(tree.url("cache"))
        mounted = false
        #expect(eventually { d.errors("root_lost").count == 1 }, "\(d.cli.stdout)")
        #expect(eventually { d.errors("root_moved").count == 1 }, "\(d.cli.stdout)")
        let status = try d.status()
        #expect((status["lost"] as? String)?.contains("another filesystem or mount") == true, "\(status)")
        #expect(d.cli.interrupt() == 0)
        #expect(DiskSnapshot(tree.url("cache")).changes(since: before).isEmpty, "a hidden file was trimmed")
        #expect(!d.cli.stdout.contains("\"event\":\"evict\""))
    }

    /// A root deleted and made again on the same filesystem is taken back (and trimmed) as before.
    @Test func aRootRemadeInPlaceIsTakenBack() throws {
        let tree = TemporaryTree("cw-back")
        tree.mkdir("home")
        tree.mkdir("cache")
        let d = try Daemon(tree)
        tree.remove("cache")
        #expect(eventually { d.errors("root_lost").count == 1 })
        for i in 0..<5 { tree.write("cache/f\(i)", size: 600, mtime: 1_500_000_000 + Double(i)) }
        #expect(eventually { d.cli.lines.filter { $0.contains("\"event\":\"ready\"") }.count == 2 }, "\(d.cli.stdout)")
        #expect(eventually { d.cli.lines.contains { $0.contains("\"event\":\"trim\"") } })
        #expect(d.cli.interrupt() == 0)
        #expect(d.errors("root_refused").isEmpty && d.errors("root_moved").isEmpty)
    }

    /// With `one_file_system` (the default) a bind mount inside the root — of a folder of the same filesystem —
    /// is neither counted nor trimmed, whether it was there at the start or placed over a folder afterwards.
    @Test func trimsNeverReachIntoABindMountOfTheSameFilesystem() throws {
        let tree = TemporaryTree("cw-back"), outside = TemporaryTree("cw-outside")
        for i in 0..<50 { outside.write("o\(i)", size: 1000, mtime: 1_400_000_000 + Double(i)) }
        let before = DiskSnapshot(outside.path)
        tree.mkdir("home")
        tree.mkdir("cache/bound")
        tree.write("cache/later/old", size: 100, mtime: 1_300_000_000)
        #expect(bindMount(outside.path, at: tree.url("cache/bound")))
        defer { unmount(tree.url("cache/bound")) }
        let d = try Daemon(tree)
        // Placed over a folder the watcher already read: the deletions may not follow it either.
        #expect(bindMount(outside.path, at: tree.url("cache/later")))
        defer { unmount(tree.url("cache/later")) }
        let trims = { d.cli.lines.filter { $0.contains("\"event\":\"trim\"") }.count }
        for round in 1...2 {
            for i in 0..<10 { tree.write("cache/new\(round)-\(i)", size: 300) }
            #expect(eventually { trims() >= round }, "\(d.cli.stdout)")
        }
        #expect(d.cli.interrupt() == 0)
        #expect(DiskSnapshot(outside.path).changes(since: before).isEmpty, "an outside file was deleted")
        let evicted = d.cli.lines.filter { $0.contains("\"event\":\"evict\"") }
        #expect(
            !evicted.isEmpty
                && !evicted.contains { $0.contains("\"file\":\"bound/") || $0.contains("\"file\":\"later/") },
            "\(d.cli.stdout)")
    }

    /// Back at its path as a bind mount of another folder of the same filesystem, also in a cache place (so the
    /// path rule alone would accept it): not the folder of the filesystem it was registered on.
    @Test func aLostRootBackAsABindMountOfAnotherFolderIsNotTakenBack() throws {
        let tree = TemporaryTree("cw-back")
        tree.mkdir("home")
        tree.mkdir("cache")
        for i in 0..<10 { tree.write("elsewhere/keep-\(i)", size: 2000, mtime: 1_500_000_000 + Double(i)) }
        let before = DiskSnapshot(tree.url("elsewhere"))
        let d = try Daemon(tree)
        tree.remove("cache")
        #expect(eventually { d.errors("root_lost").count == 1 })
        tree.mkdir("cache")
        #expect(bindMount(tree.url("elsewhere"), at: tree.url("cache")))
        defer { unmount(tree.url("cache")) }
        #expect(eventually { d.errors("root_moved").count == 1 }, "\(d.cli.stdout)")
        #expect(DiskSnapshot(tree.url("elsewhere")).changes(since: before).isEmpty)
        // A reload registers it anew — the rule applied again — and it is then a cache of its own.
        let reload = try runProcess(cachewardenBinary(), ["reload", "--control-socket", d.socket])
        #expect(reload.status == 0, "\(reload)")
        #expect(eventually { d.cli.lines.filter { $0.contains("\"event\":\"ready\"") }.count == 2 }, "\(d.cli.stdout)")
        #expect(d.cli.interrupt() == 0)
        #expect(d.errors("root_moved").count == 1, "said once")
    }

    /// A `reload` while a lost root is back in a form that cannot be taken (a symlink) keeps it lost, looked for
    /// and shown by `status` — not dropped.
    @Test func aReloadKeepsALostRootThatCannotBeTakenBack() throws {
        let tree = TemporaryTree("cw-back")
        tree.mkdir("home")
        tree.mkdir("cache")
        let d = try Daemon(tree)
        tree.remove("cache")
        #expect(eventually { d.errors("root_lost").count == 1 })
        #expect(symlink(tree.url("home"), tree.url("cache")) == 0)
        #expect(eventually { d.errors("root_symlink").count == 1 }, "\(d.cli.stdout)")
        // The reload is refused (the path leads into the home now) and the running settings stay: still lost.
        let reload = try runProcess(cachewardenBinary(), ["reload", "--control-socket", d.socket])
        #expect(reload.status == 2 && reload.err.contains("dir.c.path"), "\(reload)")
        #expect(eventually { (try? d.status())?["lost"] as? String != nil }, "\(d.cli.stdout)")
        unlink(tree.url("cache"))
        tree.write("cache/back", size: 2000)
        #expect(
            eventually { (try? d.status())?["lost"] == nil && (try? d.status())?["files"] as? Int == 0 },
            "\(d.cli.stdout)")
        #expect(d.cli.interrupt() == 0)
    }

    /// A `create = true` root outside the cache places that is deleted is made again, tagged, and taken back.
    @Test func aCreatedRootThatIsDeletedIsMadeAgain() throws {
        let tree = TemporaryTree("cw", under: TemporaryTree.outsideCachePlaces)
        tree.mkdir("home")
        let d = try Daemon(tree, extra: "dir.c.create = true\n")
        #expect(tree.exists("cache/CACHEDIR.TAG"))
        tree.remove("cache")
        #expect(eventually { d.cli.lines.filter { $0.contains("\"event\":\"ready\"") }.count == 2 }, "\(d.cli.stdout)")
        #expect(tree.exists("cache/CACHEDIR.TAG"))
        #expect(d.cli.interrupt() == 0)
        #expect(d.errors("root_refused").isEmpty)
    }
}
