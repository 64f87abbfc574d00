import CacheWarden
import CacheWardenFilesystem
import Glibc

/// The file-system reads of discovery: the real path a found cache is registered under, and a directory's names.
/// (Paths are joined by `PathResolver.absolute`, nesting is `PathResolver.isWithin`: the ones registration uses.)
enum DiscoveryPath {
    /// `relative` under `base` (absolute, normalized).
    static func join(_ base: String, _ relative: String) -> String { PathResolver.absolute(relative, relativeTo: base) }

    /// The canonical path of an existing directory (symlinks resolved, as a watcher needs its root), or nil when
    /// `path` is not a directory.
    static func existingDirectory(_ path: String) -> String? {
        guard let real = try? Syscall.canonicalPath(path), let st = try? Syscall.lstat(path: real),
            st.st_mode & S_IFMT == S_IFDIR
        else { return nil }
        return real
    }

    /// The names in a directory (not `.` and `..`), sorted; empty when it cannot be read.
    static func entries(_ path: String) -> [String] {
        guard let folder = try? Syscall.openDirectory(path: path) else { return [] }
        var names: [String] = []
        folder.borrow { listed in try? Syscall.readDirectory(listed) { names.append(String(cString: $0.name)) } }
        return names.sorted()
    }
}
