import CacheWardenFilesystem
import Glibc
import SystemPackage

/// The Cache Directory Tagging Specification's `CACHEDIR.TAG` (bford.info/cachedir): a folder holding a regular
/// file of that name that begins with the signature says of itself that it is a cache. Discovery looks for such
/// folders, and a tagged folder, or a folder inside one, may be registered wherever it is but in a protected
/// place (`RootGuard`). A root that CacheWarden creates (`create = true`) gets a tag of its own (`write(in:)`).
package enum CacheDirTag {
    /// The first bytes of a valid tag.
    package static let signature = "Signature: 8a477f597d28d172789f06886806bc55"

    /// Whether `dir` holds a regular (not symlinked) `CACHEDIR.TAG` that begins with the signature.
    package static func isTagged(_ dir: String) -> Bool {
        let tag = PathResolver.absolute("CACHEDIR.TAG", relativeTo: dir)
        guard let st = try? Syscall.lstat(path: tag), st.st_mode & S_IFMT == S_IFREG,
            let text = try? FileContents.load(tag, limit: signature.utf8.count)
        else { return false }
        return text == signature
    }

    /// Whether `dir` (a resolved path) is tagged by someone who may speak for it: the tag belongs to root or to
    /// the folder's owner, and the folder is not writable by everyone (anyone can drop a tag into `/tmp`).
    /// With `identity`, the folder must be that one (the engine judges the folder it opened, not whatever the
    /// path shows a moment later).
    package static func isTrusted(_ dir: String, identity: FolderIdentity? = nil) -> Bool {
        guard isTagged(dir), let folder = try? Syscall.lstat(path: dir), folder.isDirectory,
            folder.st_mode & S_IWOTH == 0,
            identity.map({ UInt64(folder.st_dev) == $0.device && UInt64(folder.st_ino) == $0.inode }) ?? true,
            let tag = try? Syscall.lstat(path: PathResolver.absolute("CACHEDIR.TAG", relativeTo: dir))
        else { return false }
        return tag.st_uid == 0 || tag.st_uid == folder.st_uid
    }

    /// What `write(in:)` puts in a folder CacheWarden created: the signature, then comments (the specification
    /// lets a tag say more after it).
    static let contents =
        signature + "\n# This file is a cache directory tag created by cachewarden (dir.<name>.create = true).\n"
        + "# For information about cache directory tags, see https://bford.info/cachedir/\n"

    /// Tags the folder open at `folder`, which this process has just created: the tag is created, never
    /// replaced, and never through a symlink. Throws when it cannot be written or a tag is already there.
    static func write(in folder: OwnedDescriptor) throws(Errno) {
        let tag = try OwnedDescriptor.opening {
            openat(folder.fd.rawValue, "CACHEDIR.TAG", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        let bytes = Array(contents.utf8)
        let written = tag.borrow { fd in
            bytes.withUnsafeBytes { b in Result { () throws(Errno) in try Syscall.writeAll(fd, b) } }
        }
        try written.get()
    }
}
