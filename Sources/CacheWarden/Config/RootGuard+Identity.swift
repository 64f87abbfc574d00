import CacheWardenFilesystem
import Glibc
import SystemPackage
import Synchronization

/// What a folder is, whatever path reached it: device and inode, owner, and the mount it is seen through. Taken
/// from an opened descriptor by the engine (the folder it will read), or from a path (`check`, `discover`).
package struct FolderIdentity: Sendable, Equatable {
    package var device: UInt64
    package var inode: UInt64
    package var owner: uid_t
    /// `/proc/self/mountinfo`'s ID of the mount; nil where the kernel tells none (no `statx` mount ID and no file
    /// handles): the folder's other paths are then unknown.
    package var mountID: UInt64?

    init(_ st: stat, mountID: UInt64?) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        owner = st.st_uid
        self.mountID = mountID
    }

    /// The directory at `path` (not through a final symlink); nil when there is none.
    package init?(path: String) {
        guard let st = try? Syscall.lstat(path: path), st.isDirectory else { return nil }
        self.init(st, mountID: try? Syscall.mountID(path: path))
    }

    /// The directory open at `fd`.
    package init?(descriptor fd: FileDescriptor) {
        guard let st = try? Syscall.fstat(fd), st.isDirectory else { return nil }
        self.init(st, mountID: try? Syscall.mountID(of: fd))
    }
}

/// Identity, not spelling: the same folder can be seen at more than one path (a bind mount, `mount --rbind /`),
/// and a folder can hold a mount of another. A folder is protected when any path it has is, or when a mount
/// inside it shows a protected folder; it is in a cache place only when every path it has is.
extension RootGuard {
    /// A folder by device and inode.
    struct Identity: Hashable, Sendable {
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

    /// Folders known by device and inode besides their paths: those a bind mount most often shows elsewhere.
    static let identityChecked = [
        "/var/lib", "/var/log", "/var/mail", "/var/spool", "/var/backups", "/var/www",
        "/nix/store",
    ]

    /// Device and inode of `/`, the top-level folders, the system folders above and `homes`.
    static func identities(of homes: [UserHomes.Home]) -> [Identity: Refusal] {
        var identities: [Identity: Refusal] = [:]
        if let root = Identity("/") { identities[root] = Refusal(reason: "is the filesystem root", overridable: false) }
        for top in topLevel.sorted() {
            if let id = Identity(top) {
                identities[id] =
                    identities[id] ?? Refusal(reason: "is \(top), a top-level system directory", overridable: true)
            }
        }
        for folder in identityChecked {
            if let id = Identity(folder) {
                identities[id] =
                    identities[id] ?? Refusal(reason: "is \(folder), a system directory", overridable: true)
            }
        }
        for home in homes {
            if let id = Identity(home.path) {
                identities[id] =
                    identities[id] ?? Refusal(reason: "is the home directory \(home.owner)", overridable: true)
            }
        }
        return identities
    }

    /// Every path the folder at `real` has (`MountTable.aliases`, `real` first), or nil when they cannot be told:
    /// no mount ID, or a mount the table does not list even read again.
    func aliases(of real: String, _ folder: FolderIdentity) -> [String]? {
        guard let id = folder.mountID else { return nil }
        return mounts.aliases(of: real, mountID: id) ?? MountTable.current().aliases(of: real, mountID: id)
    }

    /// What the folder at `real` (resolved) is by identity: a known folder by device and inode, the home of its
    /// own owner, a protected folder at another of its paths, or a folder holding a mount of a protected one.
    func identityRefusals(_ real: String, _ folder: FolderIdentity) -> [Refusal] {
        var found: [Refusal] = []
        if let known = identities[Identity(device: folder.device, inode: folder.inode)] { found.append(known) }
        if let home = ownerHomes.home(of: folder.owner), !CachePlaces.isInSystemCache(home.path),
            home.forms.contains(real)
        {
            found.append(Refusal(reason: "is the home directory \(home.label)", overridable: true))
        }
        for alias in aliases(of: real, folder)?.dropFirst() ?? [] {
            if let r = protection(of: alias) {
                found.append(
                    Refusal(
                        reason: "is also \(alias) (a mount shows it here), which \(r.reason)",
                        overridable: r.overridable))
            }
        }
        for mount in mounts.mounts(inside: real) {
            for alias in mounts.aliases(of: mount.point, mountID: mount.id) ?? [] {
                if let r = protection(of: alias) {
                    let shows = alias == mount.point ? "" : ", which shows \(alias)"
                    found.append(
                        Refusal(
                            reason: "holds the mount \(mount.point)\(shows), which \(r.reason)",
                            overridable: r.overridable))
                }
            }
        }
        return found
    }

    /// The cache places of the home of `owner`, where its owner's symlinks lead (`~/.cache` on another disk):
    /// a target counts when it is a folder of the same owner that is not protected — a `~/.cache` pointing at `/`
    /// or at another home says nothing.
    func placesOfOwner(_ owner: uid_t) -> [CachePlaces.Place] {
        guard let home = ownerHomes.home(of: owner) else { return [] }
        return CachePlaces.places(ofHome: home.path, owner: home.label).compactMap { place in
            let target = Self.resolved(place.path)
            guard target != place.path, let st = try? Syscall.lstat(path: target), st.isDirectory, st.st_uid == owner,
                protection(of: target) == nil, !Self.topLevel.contains(target)
            else { return nil }
            return CachePlaces.Place(path: target, what: place.what, itself: true)
        }
    }

    /// Whether a trusted `CACHEDIR.TAG` marks the folder at `real`: in it (read through `folder`'s own path), or
    /// in a folder above it on the same mount, up to the first one this guard refuses (a tag in a home marks
    /// nothing below it).
    func isTagged(_ real: String, _ folder: FolderIdentity?) -> Bool {
        // A folder still to be made: its existing part is what may be tagged.
        var real = real, folder = folder
        while folder == nil && real != "/" {
            real = PathResolver.parent(of: real)
            folder = FolderIdentity(path: real)
        }
        guard let folder, refusal(of: real, folder: folder) == nil else { return false }
        if CacheDirTag.isTrusted(real, identity: folder) { return true }
        var dir = PathResolver.parent(of: real)
        while dir != "/", let above = FolderIdentity(path: dir), above.mountID != nil, above.mountID == folder.mountID,
            refusal(of: dir, folder: above) == nil
        {
            if CacheDirTag.isTrusted(dir, identity: above) { return true }
            dir = PathResolver.parent(of: dir)
        }
        return false
    }
}

/// The homes of folders' owners, looked up once per owner for a guard's life (a registration pass): each lookup
/// reads the password database.
final class OwnerHomes: Sendable {
    private let known = Mutex<[uid_t: RootGuard.Known?]>([:])

    func home(of owner: uid_t) -> RootGuard.Known? {
        if let found = known.withLock({ $0[owner] }) { return found }
        let home = UserHomes.ofOwner(owner).map {
            RootGuard.Known($0.owner, PathResolver.absolute($0.path, relativeTo: "/"))
        }
        known.withLock { $0[owner] = home }
        return home
    }
}
