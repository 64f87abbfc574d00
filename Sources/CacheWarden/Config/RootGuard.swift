import Glibc

/// Refuses registered roots that cannot be caches, so that a slip while editing a config (`~` for
/// `~/.cache/pip`, the parent folder for the cache) never has a trim delete a home's oldest files or a system's.
///
/// Refused, after `..` and symlinks are resolved (both the path as written and where it leads are checked, and a
/// folder reached by another path, such as a bind mount, is known by its device and inode):
/// - the filesystem root, and a folder holding CacheWarden's own config file, control socket or metrics file:
///   no way out;
/// - the top-level system directories, everything under `/usr`, `/etc`, `/boot`, `/proc`, `/sys`, `/dev` (but
///   `/dev/shm/…`), `/bin`, `/sbin` and `/lib*`, and the home directories (`UserHomes`, `$HOME`, and the home of
///   a folder's owner), and any folder holding one of those. Their subfolders stay allowed. A folder with a
///   trusted `CACHEDIR.TAG` is accepted, and `allow_any_path` accepts it with a warning.
package struct RootGuard: Sendable {
    /// Top-level directories refused themselves (their subfolders are not, unless a tree below refuses them).
    static let topLevel: Set<String> = ["/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
                                        "/libx32", "/lost+found", "/media", "/mnt", "/opt", "/proc", "/root", "/run",
                                        "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr", "/var"]
    /// Trees refused with everything in them (and any top-level `/lib*`).
    static let systemTrees: Set<String> = ["/usr", "/etc", "/boot", "/proc", "/sys", "/dev", "/bin", "/sbin"]
    /// The one place under `/dev` where caches live: a tmpfs anyone may write, like `/tmp` (ccache there is a
    /// common speed-up). Its subfolders are allowed; itself is refused as the system folder it is.
    static let sharedMemory = "/dev/shm"

    /// Why a path is refused.
    package struct Refusal: Sendable, Equatable {
        /// What the path is, as a phrase: "is under /etc, a system directory".
        package var reason: String
        /// Whether a `CACHEDIR.TAG` or `allow_any_path` may accept it anyway.
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
    private struct Known: Sendable {
        var label: String
        var path: String
        var forms: Set<String>
        init(_ label: String, _ path: String) {
            self.label = label
            self.path = path
            forms = [path, RootGuard.resolved(path)]
        }
    }

    private let homes: [Known]
    private let ownFiles: [Known]
    /// Device and inode of `/`, the top-level folders and the homes: the same folder by another path.
    private let identities: [Identity: Refusal]

    private struct Identity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }
        /// The folder `path` leads to.
        init?(_ path: String) {
            guard let st = try? Syscall.lstat(path: RootGuard.resolved(path)), st.isDirectory else { return nil }
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
        }
    }

    /// A guard for `homes` and `ownFiles` (absolute paths; "config file", "control socket", …).
    package init(homes: [UserHomes.Home], ownFiles: [(what: String, path: String)]) {
        self.homes = homes.map { Known($0.owner, $0.path) }
        self.ownFiles = ownFiles.map { Known($0.what, $0.path) }
        var identities: [Identity: Refusal] = [:]
        if let root = Identity("/") { identities[root] = Refusal(reason: "is the filesystem root", overridable: false) }
        for top in Self.topLevel.sorted() {
            if let id = Identity(top) { identities[id] = identities[id] ?? Refusal(reason: "is \(top), a top-level system directory", overridable: true) }
        }
        for home in homes {
            if let id = Identity(home.path) { identities[id] = identities[id] ?? Refusal(reason: "is the home directory \(home.owner)", overridable: true) }
        }
        self.identities = identities
    }

    /// This system's: the login users' homes, `$HOME` and `extraHomes`; relative own files are taken from the
    /// current directory.
    package static func current(ownFiles: [(what: String, path: String)], extraHomes: [String] = []) -> RootGuard {
        var homes = UserHomes.loginUsers()
        if let home = DefaultLocations.current.variable("HOME"), home.hasPrefix("/") { homes.append(.init(owner: "in $HOME", path: home)) }
        homes += extraHomes.map { .init(owner: "searched", path: $0) }
        let cwd = PathResolver.currentDirectory()
        return RootGuard(homes: homes.map { .init(owner: $0.owner, path: PathResolver.absolute($0.path, relativeTo: "/")) },
                         ownFiles: ownFiles.map { ($0.what, PathResolver.absolute($0.path, relativeTo: cwd)) })
    }

    /// The verdict on registering directory `name` at `path` (absolute), with `allowAnyPath` its way out.
    package func verdict(name: String, path: String, allowAnyPath: Bool) -> Verdict {
        guard let refusal = refusal(of: path) else { return .allowed }
        let what = "\(path) \(refusal.reason)"
        guard refusal.overridable else { return .refused("\(what); register a cache folder instead") }
        let key = "dir.\(name).allow_any_path = true"
        if allowAnyPath { return .allowedWithWarning("dir.\(name).path: \(what), managed anyway because \(key)") }
        if CacheDirTag.isTrusted(Self.resolved(path)) { return .allowed }
        return .refused("\(what), not a cache; register the cache folder inside it, or, if this folder is one, put a "
            + "CACHEDIR.TAG in it or set \(key)")
    }

    /// Why `path` (absolute) cannot be a root, or nil. The path as written and where it leads are both checked;
    /// a refusal with no way out outranks one with.
    package func refusal(of path: String) -> Refusal? {
        let lexical = PathResolver.absolute(path, relativeTo: "/")
        let real = Self.resolved(lexical)
        var found: [Refusal] = []
        if let r = refusal(ofResolved: lexical) { found.append(r) }
        if real != lexical, let r = refusal(ofResolved: real) {
            found.append(Refusal(reason: "(which leads to \(real)) " + r.reason, overridable: r.overridable))
        }
        if let r = refusalByIdentity(real) { found.append(r) }
        return found.first { !$0.overridable } ?? found.first
    }

    private func refusal(ofResolved p: String) -> Refusal? {
        if p == "/" { return Refusal(reason: "is the filesystem root", overridable: false) }
        for own in ownFiles where own.forms.contains(where: { PathResolver.isWithin($0, p) }) {
            return Refusal(reason: "holds CacheWarden's own \(own.label) (\(own.path))", overridable: false)
        }
        let first = "/" + (p.split(separator: "/").first.map(String.init) ?? "")
        if first != p && (Self.systemTrees.contains(first) || first.hasPrefix("/lib")) && !PathResolver.isWithin(p, Self.sharedMemory) {
            return Refusal(reason: "is under \(first), a system directory", overridable: true)
        }
        if p == Self.sharedMemory { return Refusal(reason: "is a system directory", overridable: true) }
        if let home = homes.first(where: { $0.forms.contains(p) }) {
            return Refusal(reason: "is the home directory \(home.label)", overridable: true)
        }
        if Self.topLevel.contains(p) { return Refusal(reason: "is a top-level system directory", overridable: true) }
        for home in homes where home.forms.contains(where: { PathResolver.isWithin($0, p) }) {
            return Refusal(reason: "holds the home directory \(home.label) (\(home.path))", overridable: true)
        }
        for top in Self.topLevel.sorted() where Self.resolved(top) != top && PathResolver.isWithin(Self.resolved(top), p) {
            return Refusal(reason: "holds the system directory \(top)", overridable: true)
        }
        return nil
    }

    /// The same folder as `/`, a top-level folder or a home by another path (a bind mount), or the home of the
    /// folder's own owner (a user the password database does not enumerate).
    private func refusalByIdentity(_ real: String) -> Refusal? {
        guard let st = try? Syscall.lstat(path: real), st.isDirectory else { return nil }
        if let known = identities[Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))] { return known }
        if let home = UserHomes.ofOwner(st.st_uid), Known(home.owner, home.path).forms.contains(real) {
            return Refusal(reason: "is the home directory \(home.owner)", overridable: true)
        }
        return nil
    }

    /// Where `path` leads: its longest existing ancestor with symlinks and `..` resolved by the kernel
    /// (`realpath`), followed by the rest as written (a directory to be created need not exist yet).
    static func resolved(_ path: String) -> String {
        var head = path
        var rest: [String] = []
        while true {
            if let real = try? Syscall.canonicalPath(head) {
                return rest.isEmpty ? real : PathResolver.absolute(rest.reversed().joined(separator: "/"), relativeTo: real)
            }
            guard head != "/" else { return path }
            rest.append(PathResolver.lastComponent(head))
            head = PathResolver.parent(of: head)
        }
    }
}
