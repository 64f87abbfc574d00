import Foundation
import Testing
@testable import CacheWarden

/// `RootGuard`'s rules on paths alone: the homes and own files are given, so no user database is read. The paths
/// used do not exist here (or are the system's own folders), so what a symlink resolves to does not enter.
@Suite struct RootGuardTests {
    let guardian = RootGuard(
        homes: [.init(owner: "of user alice", path: "/srv/people/alice"), .init(owner: "of user root", path: "/root")],
        ownFiles: [("config file", "/srv/conf/cachewarden.conf"), ("control socket", "/run/cw/cw.sock")])

    func refused(_ path: String) -> String? { guardian.refusal(of: path)?.reason }

    @Test func systemFoldersAndEverythingUnderTheSystemTreesAreRefused() {
        for path in [
            "/etc", "/etc/ssl", "/usr", "/usr/share/doc", "/boot/grub", "/proc/sys", "/sys/kernel", "/dev",
            "/dev/mqueue", "/bin", "/sbin/x", "/lib", "/lib64/x", "/libx32", "/var", "/opt", "/srv", "/tmp",
            "/mnt", "/media", "/run", "/home", "/snap", "/dev/shm",
        ] {
            #expect(refused(path) != nil, "\(path) accepted")
        }
        #expect(refused("/etc/nginx")?.contains("under /etc, a system directory") == true)
        #expect(refused("/var") == "is a top-level system directory")
    }

    @Test func homesAndTheirAncestorsAreRefusedTheirSubfoldersAllowed() {
        #expect(refused("/srv/people/alice") == "is the home directory of user alice")
        #expect(refused("/srv/people") == "holds the home directory of user alice (/srv/people/alice)")
        #expect(refused("/root") == "is the home directory of user root")
        for path in [
            "/srv/people/alice/.cache", "/srv/people/alice/.cache/pip", "/srv/people/bob", "/root/.cache/go-build",
        ] {
            #expect(refused(path) == nil, "\(path): \(refused(path) ?? "")")
        }
    }

    @Test func cacheFoldersUnderTheTopLevelAreAllowed() {
        for path in [
            "/var/cache/nginx", "/var/cache", "/tmp/ccache", "/dev/shm/ccache", "/opt/cache", "/mnt/scratch/cache",
            "/cache", "/data/build-cache",
        ] {
            #expect(refused(path) == nil, "\(path): \(refused(path) ?? "")")
        }
    }

    @Test func theRootAndFoldersHoldingOurOwnFilesHaveNoWayOut() throws {
        let root = try #require(guardian.refusal(of: "/"))
        #expect(root == RootGuard.Refusal(reason: "is the filesystem root", overridable: false))
        let conf = try #require(guardian.refusal(of: "/srv/conf"))
        #expect(!conf.overridable && conf.reason.contains("own config file (/srv/conf/cachewarden.conf)"))
        #expect(guardian.refusal(of: "/run/cw")?.reason.contains("control socket") == true)
        #expect(guardian.verdict(name: "c", path: "/srv/conf", allowAnyPath: true) != .allowed)
        if case .allowedWithWarning = guardian.verdict(name: "r", path: "/", allowAnyPath: true) {
            Issue.record("/ allowed")
        }
    }

    @Test func allowAnyPathAcceptsTheRestWithAWarning() {
        guard case .allowedWithWarning(let text) = guardian.verdict(name: "e", path: "/etc/ssl", allowAnyPath: true)
        else {
            Issue.record("not accepted with a warning"); return
        }
        #expect(
            text
                == "dir.e.path: /etc/ssl is under /etc, a system directory, managed anyway because dir.e.allow_any_path = true"
        )
        guard case .refused(let why) = guardian.verdict(name: "e", path: "/etc/ssl", allowAnyPath: false) else {
            Issue.record("accepted"); return
        }
        // Protected: a tag cannot make it a cache, so only allow_any_path is offered.
        #expect(!why.contains("CACHEDIR.TAG") && why.contains("dir.e.allow_any_path = true"), "\(why)")
    }

    @Test func pathsAreResolvedLexicallyAndThroughSymlinks() throws {
        #expect(refused("/tmp/a/../../etc/x") != nil)
        let tree = TemporaryTree()
        tree.mkdir("real")
        #expect(symlink("/etc", tree.url("etc-link")) == 0)
        #expect(symlink(tree.url("home"), tree.url("home-link")) == 0)
        tree.mkdir("home/.cache")
        let g = RootGuard(homes: [.init(owner: "of user carol", path: tree.url("home-link"))], ownFiles: [])
        #expect(
            g.refusal(of: tree.url("etc-link/ssl"))?.reason
                == "(which leads to /etc/ssl) is under /etc, a system directory")
        // A folder still to be created is judged by where its existing part leads.
        #expect(g.refusal(of: tree.url("etc-link/not-yet/cache"))?.reason.contains("under /etc") == true)
        // The home is known by a symlink; the folder it leads to is the home all the same.
        #expect(g.refusal(of: tree.url("home"))?.reason == "is the home directory of user carol")
        #expect(g.refusal(of: tree.path)?.reason.hasPrefix("holds the home directory of user carol") == true)
        #expect(g.refusal(of: tree.url("home/.cache")) == nil)
        #expect(g.refusal(of: tree.url("real")) == nil)
    }

    @Test func aRefusalWithNoWayOutOutranksOneWithOne() throws {
        // The path as written is a home (a way out), where it leads holds the config file (none).
        let tree = TemporaryTree()
        tree.mkdir("real")
        #expect(symlink(tree.url("real"), tree.url("link")) == 0)
        let g = RootGuard(
            homes: [.init(owner: "of user dave", path: tree.url("link"))],
            ownFiles: [("config file", tree.url("real/cw.conf"))])
        let r = try #require(g.refusal(of: tree.url("link")))
        #expect(!r.overridable && r.reason.contains("own config file"), "\(r)")
        if case .allowedWithWarning = g.verdict(name: "x", path: tree.url("link"), allowAnyPath: true) {
            Issue.record("accepted")
        }
    }

    @Test(.enabled(if: mountUnavailable == nil, "needs root and the right to bind-mount"))
    func aHomeByAnotherPathAndAnUntrustedTag() throws {
        let tree = TemporaryTree("cw", under: TemporaryTree.outsideCachePlaces)
        tree.mkdir("home")
        tree.mkdir("mnt")
        tree.mkdir("data")
        let g = RootGuard(homes: [.init(owner: "of user erin", path: tree.url("home"))], ownFiles: [])
        // A bind mount shows the home at another path: known by its device and inode.
        #expect(bindMount(tree.url("home"), at: tree.url("mnt")))
        defer { unmount(tree.url("mnt")) }
        #expect(g.refusal(of: tree.url("mnt"))?.reason == "is the home directory of user erin")
        // A tag in a home does not make it a cache: a home is protected whatever says it is a cache.
        tree.writeText("home/CACHEDIR.TAG", CacheDirTag.signature)
        if case .allowed = g.verdict(name: "h", path: tree.url("home"), allowAnyPath: false) {
            Issue.record("a tagged home accepted")
        }
        // A tag in a folder outside the cache places makes it one, unless someone else wrote it or anyone could have.
        tree.writeText("data/CACHEDIR.TAG", CacheDirTag.signature)
        #expect(g.verdict(name: "d", path: tree.url("data"), allowAnyPath: false) == .allowed)
        #expect(chown(tree.url("data/CACHEDIR.TAG"), 65534, 65534) == 0)
        if case .allowed = g.verdict(name: "d", path: tree.url("data"), allowAnyPath: false) {
            Issue.record("a stranger's tag trusted")
        }
        #expect(chown(tree.url("data/CACHEDIR.TAG"), 0, 0) == 0 && chmod(tree.url("data"), 0o1777) == 0)
        if case .allowed = g.verdict(name: "d", path: tree.url("data"), allowAnyPath: false) {
            Issue.record("a tag in a folder anyone writes trusted")
        }
    }

    @Test func onlyUsersWhoCanLogInHaveHomesThatCount() throws {
        let homes = UserHomes.loginUsers()
        // getpwent against the file itself, for the local users (NSS may add more, never fewer).
        let passwd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
        for line in passwd.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 7, fields[5].hasPrefix("/"), fields[5] != "/" else { continue }
            let canLogIn = !UserHomes.noLoginShells.contains(PathResolver.lastComponent(fields[6]))
            #expect(homes.contains(.init(owner: "of user \(fields[0])", path: fields[5])) == canLogIn, "\(fields[0])")
        }
        // A service account's "home" is often its cache: man's /var/cache/man does not make /var/cache a home's parent.
        #expect(RootGuard.current(ownFiles: []).refusal(of: "/var/cache") == nil)
        #expect(UserHomes.ofOwner(65534)?.canLogIn == false, "nobody has no login shell")
    }
}
