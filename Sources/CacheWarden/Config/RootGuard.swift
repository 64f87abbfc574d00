import CacheWardenFilesystem
import Glibc

/// Decides whether a folder may be registered as a root: only a folder that something says is a cache is
/// trimmed. A slip while editing a config (`~` for `~/.cache/pip`, the parent folder for the cache) must never
/// have a trim delete a home's oldest files or a system's.
///
/// A folder is **accepted** when it is not protected (below) and
/// - it lies in a cache place (`CachePlaces`: `~/.cache` of any home, `$XDG_CACHE_HOME`, `/var/cache`, in
///   `/tmp`, `/var/tmp` or `/dev/shm`, a tool's own cache folder) at every path it has (a bind mount of a home's
///   `Documents` under `/tmp` is not in one) — inside a home, one of that home's (a home under `/tmp` does not
///   make its `Documents` a cache) — or in a place of its owner's home where the owner's symlink leads
///   (`~/.cache` on another disk); or
/// - it, or a folder above it on the same mount and short of a refused one, holds a trusted `CACHEDIR.TAG`
///   (`CacheDirTag`); or
/// - it does not exist yet and the config asks for it to be created (`create = true`): CacheWarden makes it and
///   tags it, so it is a cache by construction;
///
/// and, for anything else, only with `allow_any_path`, which warns. A folder is **protected** — refused whatever
/// says it is a cache, unless `allow_any_path` says so — when it is, or holds, a home of any account (but one in
/// `/var/cache`, such as `man`'s) or a system folder: a top-level folder, anything under `/usr`, `/etc`, `/boot`,
/// `/proc`, `/sys`, `/dev` (but in `/dev/shm`), `/bin`, `/sbin`, `/lib*`, `/nix`, and anything under `/var` but
/// `/var/cache`, what is in `/var/tmp` and the cache places of homes there. Protection is judged on the path as
/// written, on where it leads, and on every other path the same folder has (`RootGuard+Identity`); where those
/// cannot be told (no mount ID), only a tag or `allow_any_path` accepts a folder. The filesystem root and a folder
/// holding CacheWarden's own config file, control socket or metrics file are refused with no way out.
package struct RootGuard: Sendable {
    /// Top-level directories refused themselves (their subfolders are judged by the other rules).
    static let topLevel: Set<String> = [
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
        "/libx32", "/lost+found", "/media", "/mnt", "/nix", "/opt", "/proc", "/root",
        "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr", "/var",
    ]
    /// Trees refused with everything in them (and any top-level `/lib*`).
    static let systemTrees: Set<String> = ["/usr", "/etc", "/boot", "/proc", "/sys", "/dev", "/bin", "/sbin", "/nix"]
    /// The top-level folders that are symlinks (`/lib` → `/usr/lib` on a merged `/usr`), with where they lead.
    static let linkedTopLevel: [(String, String)] = topLevel.sorted().compactMap { top in
        let real = resolved(top)
        return real == top ? nil : (top, real)
    }
    /// A tree refused but for the cache places in it.
    static let variableData = "/var"
    /// The one place under `/dev` where caches live (a tmpfs anyone may write, like `/tmp`).
    static let sharedMemory = "/dev/shm"

    /// Why a path is refused.
    package struct Refusal: Sendable, Equatable {
        /// What the path is, as a phrase: "is under /etc, a system directory".
        package var reason: String
        /// Whether `allow_any_path` may accept it anyway.
        package var overridable: Bool
    }

    /// What registering a directory comes to.
    package enum Verdict: Sendable, Equatable {
        case allowed
        /// Accepted because of `allow_any_path`; the text is the warning to print.
        case allowedWithWarning(String)
        /// The text says why and what to do instead.
        case refused(String)
    }

    /// A protected path with the forms it is known by (as written, and where it leads).
    struct Known: Sendable {
        var label: String
        var path: String
        var forms: Set<String>
        init(_ label: String, _ path: String) {
            self.label = label
            self.path = path
            forms = [path, RootGuard.resolved(path)]
        }
    }

    let homes: [Known]
    let ownFiles: [Known]
    private(set) var places: CachePlaces
    let mounts: MountTable
    /// Device and inode of `/`, the top-level folders, the system trees and the homes.
    let identities: [Identity: Refusal]
    /// The cache places of the homes that lie under `/var` (`/var/lib/jenkins/.cache`): open in the `/var` tree.
    let placesUnderVar: [CachePlaces.Place]
    let ownerHomes = OwnerHomes()

    /// A guard protecting `homes`, refusing folders holding `ownFiles` (absolute paths; "config file", …), with
    /// `places` (by default `homes`' own; a variable's place that is itself protected is dropped) and this
    /// namespace's mounts.
    package init(
        homes: [UserHomes.Home], ownFiles: [(what: String, path: String)], places: CachePlaces? = nil,
        mounts: MountTable = .current()
    ) {
        let homes = homes.map {
            UserHomes.Home(
                owner: $0.owner, path: PathResolver.absolute($0.path, relativeTo: "/"), canLogIn: $0.canLogIn)
        }
        self.homes = homes.map { Known($0.owner, $0.path) }
        self.ownFiles = ownFiles.map { Known($0.what, $0.path) }
        self.mounts = mounts
        identities = Self.identities(of: homes)
        placesUnderVar = homes.filter { PathResolver.isWithin($0.path, Self.variableData) }
            .flatMap { CachePlaces.places(ofHome: $0.path, owner: $0.owner) }
        self.places = CachePlaces(places: [])
        let all = places ?? CachePlaces(homes: homes, environment: DefaultLocations(environment: [:], euid: geteuid()))
        // A variable naming a system folder, a home or `/` (`XDG_CACHE_HOME=/`) would make what it holds a cache.
        self.places = CachePlaces(
            places: all.places.filter { !$0.fromVariable || systemProtection(of: $0.path) == nil })
    }

    /// This system's: every account's home (but those in `/var/cache`, which are service accounts' caches),
    /// `$HOME` and `extraHomes`, the places of all of them and of `environment`'s variables (this process's by
    /// default, whose `$HOME` counts); relative own files are taken from the current directory.
    package static func current(
        ownFiles: [(what: String, path: String)], extraHomes: [String] = [],
        environment: DefaultLocations = .current
    ) -> RootGuard {
        var mine: [UserHomes.Home] = extraHomes.map { .init(owner: "searched", path: $0) }
        if let home = environment.variable("HOME"), home.hasPrefix("/") {
            mine.insert(.init(owner: "in $HOME", path: home), at: 0)
        }
        let accounts = UserHomes.allAccounts()
        let cwd = PathResolver.currentDirectory()
        return RootGuard(
            homes: protectedHomes(accounts) + mine,
            ownFiles: ownFiles.map { ($0.what, PathResolver.absolute($0.path, relativeTo: cwd)) },
            places: CachePlaces(homes: accounts + mine, environment: environment))
    }

    /// The accounts' homes that are protected: all but those in `/var/cache`.
    static func protectedHomes(_ accounts: [UserHomes.Home]) -> [UserHomes.Home] {
        accounts.filter { !CachePlaces.isInSystemCache(PathResolver.absolute($0.path, relativeTo: "/")) }
    }

    /// The verdict on registering directory `name` at `path` (absolute), with `allowAnyPath` its way out;
    /// `creating`: the folder is missing and will be created (and tagged) by CacheWarden. `folder`: what is at the
    /// path, as an opened descriptor shows it (the engine judges the very folder it will read); by default, what
    /// the path shows now.
    package func verdict(
        name: String, path: String, allowAnyPath: Bool, creating: Bool = false,
        folder: FolderIdentity? = nil
    ) -> Verdict {
        let key = "dir.\(name).allow_any_path = true"
        let lexical = PathResolver.absolute(path, relativeTo: "/")
        let real = Self.resolved(lexical)
        let folder = folder ?? FolderIdentity(path: real)
        if let refusal = refusal(of: lexical, folder: folder) {
            let what = "\(lexical) \(refusal.reason)"
            guard refusal.overridable else { return .refused("\(what); register a cache folder instead") }
            if allowAnyPath { return .allowedWithWarning("dir.\(name).path: \(what), managed anyway because \(key)") }
            return .refused(
                "\(what), not a cache; register the cache folder inside it, or, if this folder is one, set \(key)")
        }
        if isCache(real, creating: creating, folder: folder) { return .allowed }
        let what =
            "\(lexical) is not in a cache place (~/.cache, $XDG_CACHE_HOME, /var/cache, /tmp, /var/tmp, a tool's "
            + "cache folder) and holds no CACHEDIR.TAG"
        if allowAnyPath { return .allowedWithWarning("dir.\(name).path: \(what), managed anyway because \(key)") }
        return .refused("\(what); if it is a cache, put a CACHEDIR.TAG in it or set \(key)")
    }

    /// Why `path` (absolute) cannot be a root whatever says it is a cache, or nil. The path as written, where it
    /// leads and every other path of the same folder (`folder`, by default what the path shows now) are checked;
    /// a refusal with no way out outranks one with.
    package func refusal(of path: String, folder: FolderIdentity? = nil) -> Refusal? {
        let lexical = PathResolver.absolute(path, relativeTo: "/")
        let real = Self.resolved(lexical)
        var found: [Refusal] = []
        if let r = protection(of: lexical) { found.append(r) }
        if real != lexical, let r = protection(of: real) {
            found.append(Refusal(reason: "(which leads to \(real)) " + r.reason, overridable: r.overridable))
        }
        if let folder = folder ?? FolderIdentity(path: real) { found += identityRefusals(real, folder) }
        return found.first { !$0.overridable } ?? found.first
    }

    /// Why the folder spelled `p` (absolute, normalized) is protected, or nil: by its spelling alone.
    func protection(of p: String) -> Refusal? {
        if p == "/" { return systemProtection(of: p) }
        for own in ownFiles where own.forms.contains(where: { PathResolver.isWithin($0, p) }) {
            return Refusal(reason: "holds CacheWarden's own \(own.label) (\(own.path))", overridable: false)
        }
        return systemProtection(of: p)
    }

    /// `protection(of:)` but for CacheWarden's own files: the root, system folders and homes.
    func systemProtection(of p: String) -> Refusal? {
        if p == "/" { return Refusal(reason: "is the filesystem root", overridable: false) }
        let first = "/" + (p.split(separator: "/").first.map(String.init) ?? "")
        let inSharedMemory = PathResolver.isWithin(p, Self.sharedMemory) && p != Self.sharedMemory
        if first != p && (Self.systemTrees.contains(first) || first.hasPrefix("/lib")) && !inSharedMemory {
            return Refusal(reason: "is under \(first), a system directory", overridable: true)
        }
        if p == Self.sharedMemory { return Refusal(reason: "is a system directory", overridable: true) }
        if first == Self.variableData, first != p, !CachePlaces.isInSystemCache(p), !Self.isInVarTmp(p),
            !placesUnderVar.contains(where: { $0.holds(p) })
        {
            return Refusal(reason: "is under /var, a system directory", overridable: true)
        }
        if let home = homes.first(where: { $0.forms.contains(p) }) {
            return Refusal(reason: "is the home directory \(home.label)", overridable: true)
        }
        if Self.topLevel.contains(p) { return Refusal(reason: "is a top-level system directory", overridable: true) }
        for home in homes where home.forms.contains(where: { PathResolver.isWithin($0, p) }) {
            return Refusal(reason: "holds the home directory \(home.label) (\(home.path))", overridable: true)
        }
        for (top, real) in Self.linkedTopLevel where PathResolver.isWithin(real, p) {
            return Refusal(reason: "holds the system directory \(top)", overridable: true)
        }
        return nil
    }

    /// Whether something says the folder at `real` (resolved; `folder`: what is there, nil when nothing is) is a
    /// cache: a cache place at every path it has, its creation by CacheWarden, or a trusted tag in it or above it.
    func isCache(_ real: String, creating: Bool, folder: FolderIdentity?) -> Bool {
        if let paths = folder.map({ aliases(of: real, $0) }) ?? [real], paths.allSatisfy(isInPlace) { return true }
        if let folder, placesOfOwner(folder.owner).contains(where: { $0.holds(real) }) { return true }
        if creating && folder == nil && PathResolver.isMissing(real) { return true }
        return isTagged(real, folder)
    }

    /// Whether the folder spelled `p` lies in a cache place — inside a home, one of that home's (a home under
    /// `/tmp` does not make its `Documents` a cache).
    func isInPlace(_ p: String) -> Bool {
        places.place(of: p, inside: homes.first { $0.forms.contains { PathResolver.isWithin(p, $0) } }?.forms) != nil
    }

    static func isInVarTmp(_ p: String) -> Bool { PathResolver.isWithin(p, "/var/tmp") && p != "/var/tmp" }

    /// Where `path` leads: its longest existing ancestor with symlinks and `..` resolved by the kernel
    /// (`realpath`), followed by the rest as written (a directory to be created need not exist yet).
    static func resolved(_ path: String) -> String {
        let path = PathResolver.absolute(path, relativeTo: "/")
        var head = path
        var rest: [String] = []
        while true {
            if let real = try? Syscall.canonicalPath(head) {
                return rest.isEmpty
                    ? real : PathResolver.absolute(rest.reversed().joined(separator: "/"), relativeTo: real)
            }
            guard head != "/" else { return path }
            rest.append(PathResolver.lastComponent(head))
            head = PathResolver.parent(of: head)
        }
    }
}
