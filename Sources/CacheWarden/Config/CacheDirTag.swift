import Glibc

/// The Cache Directory Tagging Specification's `CACHEDIR.TAG` (bford.info/cachedir): a folder holding a regular
/// file of that name that begins with the signature says of itself that it is a cache. Discovery looks for such
/// folders, and a tagged folder may be registered wherever it is (`RootGuard`).
package enum CacheDirTag {
    /// The first bytes of a valid tag.
    package static let signature = "Signature: 8a477f597d28d172789f06886806bc55"

    /// Whether `dir` holds a regular (not symlinked) `CACHEDIR.TAG` that begins with the signature.
    package static func isTagged(_ dir: String) -> Bool {
        let tag = PathResolver.absolute("CACHEDIR.TAG", relativeTo: dir)
        guard let st = try? Syscall.lstat(path: tag), st.st_mode & S_IFMT == S_IFREG,
              let text = try? FileContents.load(tag, limit: signature.utf8.count) else { return false }
        return text == signature
    }

    /// Whether `dir` (a resolved path) is tagged by someone who may speak for it: the tag belongs to root or to
    /// the folder's owner, and the folder is not writable by everyone (anyone can drop a tag into `/tmp`).
    package static func isTrusted(_ dir: String) -> Bool {
        guard isTagged(dir), let folder = try? Syscall.lstat(path: dir), folder.isDirectory, folder.st_mode & S_IWOTH == 0,
              let tag = try? Syscall.lstat(path: PathResolver.absolute("CACHEDIR.TAG", relativeTo: dir)) else { return false }
        return tag.st_uid == 0 || tag.st_uid == folder.st_uid
    }
}
