import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The allow-list: a folder is accepted only when something says it is a cache — a cache place, a trusted
/// `CACHEDIR.TAG` in it or above it, its creation by CacheWarden — and everything else is refused with the two
/// ways out. The homes and the environment are given, so no user database is read.
@Suite struct RootGuardPlacesTests {
    static let alice = "/srv/people/alice"
    let guardian = RootGuard(
        homes: [
            .init(owner: "of user alice", path: alice),
            .init(owner: "of user sftp", path: "/srv/sftp/bob", canLogIn: false),
        ],
        ownFiles: [],
        places: CachePlaces(
            homes: [.init(owner: "of user alice", path: alice)],
            environment: DefaultLocations(
                environment: [
                    "XDG_CACHE_HOME": "/data/xdg-cache", "GOCACHE": "/data/go-build",
                    "CARGO_HOME": "/opt/cargo", "HF_HOME": "/data/hf",
                ], euid: 1000)),
        mounts: MountTable(mounts: []))

    func accepted(_ path: String) -> Bool { guardian.verdict(name: "c", path: path, allowAnyPath: false) == .allowed }

    /// What the attacker and the careless user tried: none of it says it is a cache.
    @Test func foldersNothingSaysAreCachesAreRefused() {
        let a = Self.alice
        for path in [
            "\(a)/Documents", "\(a)/.ssh", "\(a)/.config", "\(a)/.local/share", "\(a)/src/project", "/var/log",
            "/var/mail", "/var/spool", "/var/backups", "/var/lib", "/var/lib/app/cache", "/nix", "/nix/store",
            "/srv/sftp/bob", "/srv/sftp/bob/uploads", "/data/hf", "/opt/cargo", "/tmp", "/var/tmp", "/dev/shm",
            "/srv/data", "/mnt/disk/cache",
        ] {
            #expect(!accepted(path), "\(path) accepted")
        }
    }

    @Test func cachePlacesAreAccepted() {
        let a = Self.alice
        for path in [
            "\(a)/.cache", "\(a)/.cache/pip", "\(a)/.npm/_cacache", "\(a)/.cargo/registry", "\(a)/.gradle/caches",
            "\(a)/.ccache", "\(a)/.local/share/pnpm/store", "/var/cache", "/var/cache/nginx", "/tmp/ccache",
            "/var/tmp/build", "/dev/shm/ccache", "/data/xdg-cache", "/data/xdg-cache/uv", "/data/go-build",
            "/opt/cargo/registry", "/data/hf/hub",
        ] {
            #expect(accepted(path), "\(path): \(guardian.verdict(name: "c", path: path, allowAnyPath: false))")
        }
    }

    /// The refusal names the file's key and both ways out; allow_any_path accepts with a warning.
    @Test func aRefusalNamesBothWaysOut() throws {
        guard
            case .refused(let why) = guardian.verdict(
                name: "docs", path: "\(Self.alice)/Documents", allowAnyPath: false)
        else {
            Issue.record("accepted"); return
        }
        #expect(why.hasPrefix("\(Self.alice)/Documents is not in a cache place"), "\(why)")
        #expect(why.contains("put a CACHEDIR.TAG in it or set dir.docs.allow_any_path = true"), "\(why)")
        guard
            case .allowedWithWarning(let warning) = guardian.verdict(
                name: "docs", path: "\(Self.alice)/Documents", allowAnyPath: true)
        else {
            Issue.record("not accepted with a warning"); return
        }
        #expect(warning.hasSuffix("managed anyway because dir.docs.allow_any_path = true"), "\(warning)")
    }

    /// A home that lies in a system cache place (a test's fake home in /tmp) does not make its Documents a cache:
    /// inside a home, only that home's places count.
    @Test func insideAHomeOnlyItsOwnPlacesCount() {
        let g = RootGuard(
            homes: [.init(owner: "in $HOME", path: "/tmp/fake-home")], ownFiles: [], mounts: MountTable(mounts: []))
        #expect(g.verdict(name: "d", path: "/tmp/fake-home/Documents", allowAnyPath: false) != .allowed)
        #expect(g.verdict(name: "c", path: "/tmp/fake-home/.cache/pip", allowAnyPath: false) == .allowed)
        #expect(g.verdict(name: "o", path: "/tmp/other", allowAnyPath: false) == .allowed)
    }

    /// A tag marks its folder and everything below it (the specification's rule), up to a protected folder: a tag
    /// in a home does not make the home's folders caches.
    @Test func aTagInTheFolderOrAboveItSaysItIsACache() throws {
        let tree = TemporaryTree("cw", under: TemporaryTree.outsideCachePlaces)
        for dir in ["tagged/sub/deeper", "plain", "home/Documents"] { tree.mkdir(dir) }
        tree.writeText("tagged/CACHEDIR.TAG", CacheDirTag.signature + "\n# made by a build tool\n")
        tree.writeText("home/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        let g = RootGuard(
            homes: [.init(owner: "in $HOME", path: tree.url("home"))], ownFiles: [], mounts: MountTable(mounts: []))
        for dir in ["tagged", "tagged/sub", "tagged/sub/deeper", "tagged/not-yet-made"] {
            #expect(g.verdict(name: "t", path: tree.url(dir), allowAnyPath: false) == .allowed, "\(dir)")
        }
        for dir in ["plain", "home/Documents", "home"] {
            #expect(g.verdict(name: "p", path: tree.url(dir), allowAnyPath: false) != .allowed, "\(dir)")
        }
        // A tag without the signature says nothing.
        tree.writeText("plain/CACHEDIR.TAG", "Signature: 0000\n")
        #expect(g.verdict(name: "p", path: tree.url("plain"), allowAnyPath: false) != .allowed)
    }

    /// A folder CacheWarden is to create is a cache by construction (it will be made empty and tagged) — unless it
    /// would be protected.
    @Test func aFolderToBeCreatedIsACacheButNeverAProtectedOne() {
        let missing = TemporaryTree.outsideCachePlaces + "/cw-missing-\(getpid())/cache"
        #expect(guardian.verdict(name: "n", path: missing, allowAnyPath: false, creating: true) == .allowed)
        #expect(guardian.verdict(name: "n", path: missing, allowAnyPath: false, creating: false) != .allowed)
        #expect(guardian.verdict(name: "n", path: "/etc/not-yet", allowAnyPath: false, creating: true) != .allowed)
        #expect(guardian.verdict(name: "n", path: "/var/lib/not-yet", allowAnyPath: false, creating: true) != .allowed)
    }

    /// `/var` is a system tree but for its cache places; a home under it has its own places.
    @Test func underVarOnlyTheCachePlacesAreOpen() {
        let g = RootGuard(
            homes: [.init(owner: "of user jenkins", path: "/var/lib/jenkins")], ownFiles: [],
            mounts: MountTable(mounts: []))
        #expect(g.refusal(of: "/var/lib/jenkins/workspace")?.reason == "is under /var, a system directory")
        #expect(g.refusal(of: "/var/lib/jenkins/.cache") == nil)
        #expect(g.verdict(name: "j", path: "/var/lib/jenkins/.cache/go-build", allowAnyPath: false) == .allowed)
        #expect(g.refusal(of: "/var/cache/man") == nil)
        #expect(g.refusal(of: "/var/tmp")?.reason == "is under /var, a system directory")
    }

    /// A place is spelled: a symlink at a home's `~/.cache` pointing at `/`, `/var` or another home says nothing;
    /// and a variable naming a protected folder (`XDG_CACHE_HOME=/`) is no place.
    @Test func placesThatWouldOpenProtectedFoldersAreIgnored() {
        let tree = TemporaryTree("cw", under: TemporaryTree.outsideCachePlaces)
        tree.mkdir("alice")
        tree.mkdir("bob/Documents")
        #expect(symlink("/", tree.url("alice/.cache")) == 0)
        #expect(symlink(tree.url("bob/Documents"), tree.url("alice/.npm")) == 0)
        for value in ["/", "/var", "/srv", tree.url("bob")] {
            let g = RootGuard(
                homes: [
                    .init(owner: "of user alice", path: tree.url("alice")),
                    .init(owner: "of user bob", path: tree.url("bob")),
                ],
                ownFiles: [],
                places: CachePlaces(
                    homes: [.init(owner: "of user alice", path: tree.url("alice"))],
                    environment: DefaultLocations(environment: ["XDG_CACHE_HOME": value], euid: 1000)),
                mounts: .current())
            for path in ["/var/lib/mysql", "/var/log/journal", tree.url("bob/Documents"), tree.url("bob/Documents/x")] {
                #expect(
                    g.verdict(name: "x", path: path, allowAnyPath: false) != .allowed,
                    "\(path) with XDG_CACHE_HOME=\(value)")
            }
        }
    }

    /// Where the kernel cannot tell a folder's mount (no `statx` mount ID, no file handles), its other paths are
    /// unknown: a cache place is not enough, only a tag (or `allow_any_path`) accepts it.
    @Test func aFolderWhoseOtherPathsCannotBeToldNeedsATag() throws {
        let tree = TemporaryTree("cw-unknown")
        tree.mkdir("cache")
        var unknown = try #require(FolderIdentity(path: tree.url("cache")))
        #expect(guardian.verdict(name: "c", path: tree.url("cache"), allowAnyPath: false, folder: unknown) == .allowed)
        unknown.mountID = nil
        #expect(guardian.verdict(name: "c", path: tree.url("cache"), allowAnyPath: false, folder: unknown) != .allowed)
        tree.writeText("cache/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        #expect(guardian.verdict(name: "c", path: tree.url("cache"), allowAnyPath: false, folder: unknown) == .allowed)
    }

    /// Every account's home is protected, a guest's under /tmp included; only homes in /var/cache (a service
    /// account's, man's /var/cache/man) are caches.
    @Test func homesInTmpAreProtectedHomesInVarCacheAreNot() {
        let accounts: [UserHomes.Home] = [
            .init(owner: "of user guest", path: "/tmp/guest-ab12"),
            .init(owner: "of user man", path: "/var/cache/man", canLogIn: false),
            .init(owner: "of user www-data", path: "/var/www", canLogIn: false),
        ]
        #expect(RootGuard.protectedHomes(accounts).map(\.path) == ["/tmp/guest-ab12", "/var/www"])
        let g = RootGuard(
            homes: RootGuard.protectedHomes(accounts), ownFiles: [],
            places: CachePlaces(homes: accounts, environment: DefaultLocations(environment: [:], euid: 0)),
            mounts: MountTable(mounts: []))
        #expect(g.verdict(name: "g", path: "/tmp/guest-ab12/Documents", allowAnyPath: false) != .allowed)
        #expect(g.verdict(name: "g", path: "/tmp/guest-ab12", allowAnyPath: false) != .allowed)
        #expect(g.verdict(name: "g", path: "/tmp/guest-ab12/.cache/pip", allowAnyPath: false) == .allowed)
        #expect(g.verdict(name: "m", path: "/var/cache/man", allowAnyPath: false) == .allowed)
    }
}
