import CacheWarden
import CacheWardenFilesystem
import Glibc

/// Finds the folders that say they are caches: a `CACHEDIR.TAG` file that begins with the standard signature
/// (the Cache Directory Tagging convention, https://bford.info/cachedir/; cargo's `target/`, ccache, borg, uv and
/// others write one). Breadth-first from `root`, so the shallow ones come first when the time runs out; symlinks
/// are not followed, other filesystems are not entered, and a tagged folder is not searched further, nor is
/// CacheWarden's trash.
struct CacheDirTagSearch {
    /// How many levels below `root` are searched (the root itself is level 0).
    var depth: Int
    /// How long the search may take; it stops there and says it did not finish.
    var timeLimit: Duration
    /// Folders not to search (caches already found by name): neither they nor anything inside them.
    var skip: [String] = []

    struct Result {
        var tagged: [String]
        /// False when the time limit stopped the search before every folder within `depth` was read.
        var complete: Bool
    }

    func run(from root: String) -> Result {
        let clock = ContinuousClock(), deadline = clock.now.advanced(by: timeLimit)
        guard let top = try? Syscall.lstat(path: root), top.st_mode & S_IFMT == S_IFDIR else {
            return Result(tagged: [], complete: true)
        }
        var tagged: [String] = [], level = [root]
        for currentDepth in 0...depth {
            var next: [String] = []
            for dir in level {
                guard clock.now < deadline else { return Result(tagged: tagged, complete: false) }
                if skip.contains(where: { PathResolver.isWithin(dir, $0) }) { continue }
                // The search root itself is never a result: a tagged home would register all of it.
                if currentDepth > 0 && CacheDirTag.isTagged(dir) { tagged.append(dir); continue }
                guard currentDepth < depth else { continue }
                next += Self.subdirectories(of: dir, device: top.st_dev)
            }
            level = next
        }
        return Result(tagged: tagged, complete: true)
    }

    /// The real subdirectories of `dir` on `device` (no symlinks).
    private static func subdirectories(of dir: String, device: dev_t) -> [String] {
        DiscoveryPath.entries(dir).compactMap { name in
            // CacheWarden's own trash: what it is deleting (a uvx environment there still holds its tag).
            guard !name.hasPrefix(TrashFolder.name) else { return nil }
            let path = DiscoveryPath.join(dir, name)
            guard let st = try? Syscall.lstat(path: path), st.st_mode & S_IFMT == S_IFDIR, st.st_dev == device else {
                return nil
            }
            return path
        }
    }
}
