import Glibc
import SystemPackage

/// The files a client lock's path names now: the path walked from the root (or, for `../NAME`, from the root's
/// folder) one component at a time, each folder opened `O_PATH | O_DIRECTORY | O_NOFOLLOW` from the one before, so
/// that no symlink is ever followed and nothing outside is reached; a component with `*`, `?` or `[…]` is matched
/// against the folder's listing (`fnmatch(3)`, names in byte order). Nothing is created: a folder or file that is
/// not there is no target (no client has made it, so none can hold it).
struct LockTarget {
    init(folder: OwnedDescriptor, name: String, display: String, literal: Bool) {
        self.folder = folder
        self.name = name
        self.display = display
        self.literal = literal
        cName = name.utf8CString.map { $0 }
    }

    /// The folder the file is in (shared by the targets in it).
    let folder: OwnedDescriptor
    let name: String
    /// `name` NUL-terminated, made once: a held lock's path is looked at before every deletion.
    let cName: [CChar]
    /// The path relative to the root, as reports show it (`../.package-cache`, `.locks/models--a--b/x.lock`).
    let display: String
    /// Named outright rather than matched by a pattern: what is there must be a lock file.
    let literal: Bool
}

/// A lock path that cannot name a lock file (a component on the way is not a folder, or cannot be opened).
struct LockPathUnusable: Error {
    var display: String
    var detail: String
}

enum LockTargets {
    /// The targets of `components` (`{unit}` already filled in) under the root at the canonical `rootPath`.
    static func resolve(_ components: [Substring], rootPath: String) throws(LockPathUnusable) -> [LockTarget] {
        let beside = components.first == ".."
        let base = beside ? PathResolver.parent(of: rootPath) : rootPath
        let fd: Int32
        do throws(Errno) { fd = try Syscall.openRoot(path: base) } catch {
            throw LockPathUnusable(display: beside ? "../" : ".", detail: "its folder \(base) cannot be opened (\(String(cString: strerror(error.rawValue))))")
        }
        return try walk(beside ? Array(components.dropFirst()) : components, in: OwnedDescriptor(fd),
                        prefix: beside ? "../" : "", literal: true)
    }

    private static func walk(_ rest: [Substring], in folder: OwnedDescriptor, prefix: String,
                             literal: Bool) throws(LockPathUnusable) -> [LockTarget] {
        guard let first = rest.first else { return [] }
        let names = ClientLock.isGlob(first) ? matching(first, in: folder) : [String(first)]
        let isLiteral = literal && !ClientLock.isGlob(first)
        if rest.count == 1 {
            return names.map { LockTarget(folder: folder, name: $0, display: prefix + $0, literal: isLiteral) }
        }
        var out: [LockTarget] = []
        for name in names {
            let fd: Int32
            do throws(Errno) { fd = try Array(name.utf8).withCString { p throws(Errno) in try Syscall.openDirectoryPath(at: folder.fd, p) } } catch {
                // Not there: nothing to take. Something else than a folder (a file, a symlink): an error where the
                // path names it outright; a pattern simply does not match it.
                if error == .noSuchFileOrDirectory || !isLiteral { continue }
                let what = error == .notDirectory || error == .tooManySymbolicLinkLevels ? "not a folder (or a symlink)" : "not reachable (\(String(cString: strerror(error.rawValue))))"
                throw LockPathUnusable(display: prefix + name, detail: "\(prefix + name) is \(what)")
            }
            out += try walk(Array(rest.dropFirst()), in: OwnedDescriptor(fd), prefix: prefix + name + "/", literal: isLiteral)
        }
        return out
    }

    /// The names in `folder` that `pattern` matches (`fnmatch` without flags: `*` matches a leading dot too), in
    /// byte order.
    private static func matching(_ pattern: Substring, in folder: OwnedDescriptor) -> [String] {
        guard let listing = try? Syscall.reopenForListing(folder.fd) else { return [] }
        defer { Syscall.close(listing) }
        var names: [String] = []
        let text = String(pattern)
        try? Syscall.readDirectory(listing) { entry in
            if fnmatch(text, entry.name, 0) == 0 { names.append(String(cString: entry.name)) }
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
