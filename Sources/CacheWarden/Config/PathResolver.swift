import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Path arithmetic for registration: absolute paths, parents, existence checks, and nesting between roots.
package enum PathResolver {
    package static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `path` made absolute against `base`, with `.`/`..`/duplicate slashes removed lexically.
    package static func absolute(_ path: String, relativeTo base: String) -> String {
        let joined = path.hasPrefix("/") ? path : base + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// `mkdir -p`: creates `path` and its missing parents (failures surface in the existence check that follows).
    package static func createDirectories(_ path: String) {
        _ = makeDirectories(path)
    }

    /// `mkdir -p` that never follows a symlink: from `/` down, each component is made with `mkdirat` and opened
    /// `O_PATH | O_DIRECTORY | O_NOFOLLOW` from its parent's descriptor, so a symlink swapped in on the way stops
    /// it instead of leading it elsewhere. Returns the last folder and whether this call made it (not another
    /// process, in between); nil when a component is not a directory or cannot be made.
    static func makeDirectories(_ path: String) -> (folder: OwnedDescriptor, made: Bool)? {
        guard var folder = try? Syscall.openDirectoryPath(path: "/") else { return nil }
        var made = false
        for part in absolute(path, relativeTo: "/").split(separator: "/") {
            let name = Array(part.utf8)
            made =
                (try? name.withCString { n throws(Errno) in
                    try Syscall.retrying { mkdirat(folder.fd.rawValue, n, 0o755) }
                })
                != nil
            guard
                let next = folder.borrow({ fd in
                    try? name.withCString({ n throws(Errno) in try Syscall.openDirectoryPath(at: fd, n) })
                })
            else { return nil }
            folder = next
        }
        return (folder, made)
    }

    /// Whether nothing exists at `path` (not even a dangling symlink).
    package static func isMissing(_ path: String) -> Bool {
        do throws(Errno) { _ = try Syscall.lstat(path: path); return false } catch {
            return error == .noSuchFileOrDirectory
        }
    }

    /// The last component of a path (`c` of `/a/b/c`; `/` of `/`).
    package static func lastComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) != path.endIndex else { return path }
        return String(path[path.index(after: slash)...])
    }

    package static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// Why `path` cannot be a registered root, or `nil` when it can.
    package static func directoryProblem(_ path: String) -> String? {
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(path: path) } catch {
            if error == .noSuchFileOrDirectory { return "\(path) does not exist; expected an existing directory" }
            if error == .permissionDenied {
                return "\(path) is not accessible (permission denied); run as a user who can read it"
            }
            return "\(path): \(error)"
        }
        if st.isSymlink { return "\(path) is a symlink; expected a real directory (give its target instead)" }
        if !st.isDirectory { return "\(path) is not a directory; expected a directory" }
        return nil
    }

    /// Whether `path` is `ancestor` or lies inside it (lexically: both absolute and normalized). Compared byte by
    /// byte: two different names that Unicode calls equivalent (`é` and `e` + a combining accent) are two folders.
    package static func isWithin(_ path: String, _ ancestor: String) -> Bool {
        let slash = UInt8(ascii: "/")
        let p = path.utf8, a = ancestor.utf8
        let length = a.last == slash ? a.count - 1 : a.count
        guard p.count >= length, p.prefix(length).elementsEqual(a.prefix(length)) else { return false }
        return p.count == length || p[p.index(p.startIndex, offsetBy: length)] == slash
    }

    /// The first directory whose path equals or nests with an earlier one's, with the earliest such one:
    /// `(earlier, later)`, or nil. Paths are absolute and normalized (`absolute(_:relativeTo:)`). Linear in the
    /// directories (times their depth), where comparing every pair was quadratic in what a config file holds:
    /// each path's ancestors are looked up among the earlier paths, and the ancestors of the earlier paths are kept
    /// to find an earlier one below it.
    package static func firstOverlap(_ dirs: [DirectorySettings]) -> (DirectorySettings, DirectorySettings)? {
        var paths: [Substring: Int] = [:] // an earlier directory's path → its index
        var holders: [Substring: Int] = [:] // an ancestor of an earlier path → the first directory below it
        for (later, dir) in dirs.enumerated() {
            let path = dir.path[...]
            let ancestors = properAncestors(of: dir.path)
            let earlier = (ancestors + [path]).compactMap { paths[$0] } + [holders[path]].compactMap { $0 }
            if let first = earlier.min() { return (dirs[first], dir) }
            paths[path] = later
            for ancestor in ancestors where holders[ancestor] == nil { holders[ancestor] = later }
        }
        return nil
    }

    /// `/`, `/a` and `/a/b` for `/a/b/c` (absolute and normalized); none for `/`.
    private static func properAncestors(of path: String) -> [Substring] {
        guard path.count > 1 else { return [] }
        var out: [Substring] = [path.prefix(1)]
        var rest = path.dropFirst()
        while let slash = rest.firstIndex(of: "/") {
            out.append(path[..<slash])
            rest = path[path.index(after: slash)...]
        }
        return out
    }
}
