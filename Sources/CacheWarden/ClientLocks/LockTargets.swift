import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// One component of a lock path, as bytes: a pattern (`*`, `?` or `[…]` in the config's text) or a literal name.
/// The components filled in for `{unit}` are the unit's own path bytes, always literal: a unit named `build[1]`
/// or one whose name is not UTF-8 is that very name, never a pattern and never re-encoded.
struct LockComponent: Equatable {
    var bytes: [UInt8]
    var isPattern: Bool

    /// A component of the config's text (a pattern when it holds `*`, `?` or `[`).
    init(text: Substring) {
        bytes = Array(text.utf8)
        isPattern = ClientLock.isGlob(text)
    }

    /// A literal name.
    init(literal: some Collection<UInt8>) {
        bytes = Array(literal)
        isPattern = false
    }
}

/// A folder on a lock's path, held open (`O_PATH`), with the path it was reached by from the root (or its folder):
/// a re-check looks there again (`stillHeld()`), so that a folder removed or replaced since is seen, not the old one
/// through this descriptor.
final class LockFolder {
    private let owner: OwnedDescriptor
    var fd: FileDescriptor { owner.fd }
    /// Its absolute path, and that NUL-terminated.
    let path: [UInt8]
    let cPath: [CChar]
    /// Relative to the root, as reports show it (`.`, `../`, `.locks/models--a`).
    let display: String

    init(_ owner: OwnedDescriptor, path: [UInt8], display: [UInt8]) {
        self.owner = owner
        self.path = path
        cPath = path.map { CChar(bitPattern: $0) } + [0]
        self.display = display.isEmpty ? "." : PathBytes.display(display)
    }
}

/// The files a client lock's path names now: the path walked from the root (or, for `../NAME`, from the root's
/// folder) one component at a time, each folder opened `O_PATH | O_DIRECTORY | O_NOFOLLOW` from the one before, so
/// that no symlink is ever followed and nothing outside is reached; a pattern component is matched against the
/// folder's listing (`fnmatch(3)`, names in byte order). Nothing is created: a folder or file that is not there is
/// no target (no client has made it, so none can hold it), but it is remembered (`absent`), and so is every folder a
/// pattern was matched in (`patterns`): a name that appears there later is a lock that was not taken.
struct LockTarget {
    init(folder: LockFolder, name: [UInt8], prefix: [UInt8], literal: Bool) {
        self.folder = folder
        self.name = name
        self.display = PathBytes.display(prefix + name)
        self.literal = literal
        cName = name.map { CChar(bitPattern: $0) } + [0]
    }

    /// The folder the file is in (shared by the targets in it).
    let folder: LockFolder
    let name: [UInt8]
    /// `name` NUL-terminated, made once: a held lock's path is looked at before every deletion.
    let cName: [CChar]
    /// The path relative to the root, as reports show it (`../.package-cache`, `.locks/models--a--b/x.lock`).
    let display: String
    /// Named outright rather than matched by a pattern: what is there must be a lock file.
    let literal: Bool

    /// What the name shows now, not following a symlink (`ENOENT`: nothing there).
    func lstat() throws(Errno) -> stat {
        try cName.withUnsafeBufferPointer { p throws(Errno) in try Syscall.lstat(at: folder.fd, p.baseAddress!) }
    }

    /// Opens the lock file as it is (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` and `access`), never creating it.
    func open(_ access: Int32) throws(Errno) -> OwnedDescriptor {
        try cName.withUnsafeBufferPointer { p throws(Errno) in
            try OwnedDescriptor.opening {
                openat(folder.fd.rawValue, p.baseAddress!, access | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            }
        }
    }
}

/// A folder where a pattern component was matched, and the path from there: walked again before each deletion.
struct LockPatternSite {
    let folder: LockFolder
    let rest: [LockComponent]
    let prefix: [UInt8]
}

/// What a lock path names now: its targets, the literal names not there, and the folders its patterns listed.
struct LockResolution {
    var targets: [LockTarget] = []
    var absent: [LockTarget] = []
    var patterns: [LockPatternSite] = []
}

/// A lock path that cannot name a lock file (a component on the way is not a folder, or cannot be opened).
struct LockPathUnusable: Error {
    var display: String
    var detail: String
}

enum LockTargets {
    /// What `components` (`{unit}` already filled in) name under the root at the canonical `rootPath`.
    static func resolve(_ components: [LockComponent], rootPath: String) throws(LockPathUnusable) -> LockResolution {
        let beside = components.first == LockComponent(literal: "..".utf8)
        let base = beside ? PathResolver.parent(of: rootPath) : rootPath
        let fd: OwnedDescriptor
        do throws(Errno) { fd = try Syscall.openRoot(path: base) } catch {
            throw LockPathUnusable(
                display: beside ? "../" : ".", detail: "its folder \(base) cannot be opened (\(error))")
        }
        var out = LockResolution()
        let folder = LockFolder(fd, path: Array(base.utf8), display: beside ? Array("..".utf8) : [])
        try walk(
            beside ? Array(components.dropFirst()) : components, in: folder,
            prefix: beside ? Array("../".utf8) : [], literal: true, into: &out)
        return out
    }

    /// The targets `site` names now (a look again at a pattern's folder); nil when a folder there cannot be read
    /// (`EMFILE`, `EACCES`, …): then whether a lock appeared cannot be told.
    static func targets(of site: LockPatternSite) -> [LockTarget]? {
        var out = LockResolution()
        do throws(LockPathUnusable) {
            try walk(site.rest, in: site.folder, prefix: site.prefix, literal: false, into: &out)
        } catch { return nil }
        return out.targets
    }

    private static func walk(
        _ rest: [LockComponent], in folder: LockFolder, prefix: [UInt8], literal: Bool,
        into out: inout LockResolution
    ) throws(LockPathUnusable) {
        guard let first = rest.first else { return }
        // A pattern not inside another one: its folder is listed again later (the outer one's covers the inner).
        if first.isPattern && literal {
            out.patterns.append(LockPatternSite(folder: folder, rest: rest, prefix: prefix))
        }
        let names: [[UInt8]]
        if first.isPattern {
            // A folder that cannot be listed may hold a lock: never taken as holding none.
            do throws(Errno) { names = try matching(first.bytes, in: folder) } catch {
                throw LockPathUnusable(
                    display: folder.display, detail: "its folder \(folder.display) cannot be listed (\(error))")
            }
        } else {
            names = [first.bytes]
        }
        let isLiteral = literal && !first.isPattern
        if rest.count == 1 {
            out.targets += names.map { LockTarget(folder: folder, name: $0, prefix: prefix, literal: isLiteral) }
            return
        }
        for name in names {
            let fd: OwnedDescriptor
            do throws(Errno) {
                fd = try name.withCString { p throws(Errno) in try Syscall.openDirectoryPath(at: folder.fd, p) }
            } catch {
                // Not there: nothing to take now, but one made later is a lock. Something else than a folder (a
                // file, a symlink): an error where the path names it outright; a pattern simply does not match it.
                if error == .noSuchFileOrDirectory {
                    if isLiteral {
                        out.absent.append(LockTarget(folder: folder, name: name, prefix: prefix, literal: true))
                    }
                    continue
                }
                // A pattern does not match what is no folder; one it cannot open (`EMFILE`, `EACCES`) may hold a lock.
                if !isLiteral && (error == .notDirectory || error == .tooManySymbolicLinkLevels) { continue }
                let shown = PathBytes.display(prefix + name)
                let what =
                    error == .notDirectory || error == .tooManySymbolicLinkLevels
                    ? "not a folder (or a symlink)" : "not reachable (\(error))"
                throw LockPathUnusable(display: shown, detail: "\(shown) is \(what)")
            }
            let child = LockFolder(fd, path: PathBytes.join(folder.path, name), display: prefix + name)
            try walk(
                Array(rest.dropFirst()), in: child, prefix: prefix + name + [PathBytes.separator], literal: isLiteral,
                into: &out)
        }
    }

    /// The names in `folder` that `pattern` matches (`fnmatch` without flags: `*` matches a leading dot too), in
    /// byte order.
    private static func matching(_ pattern: [UInt8], in folder: LockFolder) throws(Errno) -> [[UInt8]] {
        let listing = try Syscall.reopenForListing(folder.fd)
        var names: [[UInt8]] = []
        let cPattern = pattern.map { CChar(bitPattern: $0) } + [0]
        try listing.borrow { (listed) throws(Errno) in
            try Syscall.readDirectory(listed) { entry in
                if fnmatch(cPattern, entry.name, 0) == 0 {
                    names.append(Array(UnsafeRawBufferPointer(start: entry.name, count: strlen(entry.name))))
                }
            }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }
}
