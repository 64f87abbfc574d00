import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// One symlink as it was found: its folder, its name, its inode and what it said. A deletion checks it is still
/// that link.
struct PointerLink: Equatable {
    var dir: NodeID
    var name: [UInt8]
    var ino: UInt64
    var target: [UInt8]
}

/// The symlinks of the folders that hold pointers (`evict_pointers`: globs of folders relative to the root, each
/// with everything below it), found through descriptors only: each folder opened from the root down by
/// `VerifiedDirectories`, listed once with `getdents64`, each link `lstat`-ed and read with `readlinkat`, never
/// followed. The ledger counts no symlink, so they are looked for once, when a trim collects its units; no other
/// folder is listed (not the units' interiors). Each link comes with its companions: the regular files beside it
/// named `<link>.<ext>`, each given to the link whose name is its longest dot-bounded prefix (a dictionary look-up
/// per dot), none whose name is a dot-bounded prefix of a link's, and, where the profile lists the extensions of
/// its pointer files (uv: `rev`, `http`, `msgpack`, `whl`), those only. Anything that cannot be read — a folder, a
/// link, a folder the ledger does not know yet — is `problem`: the trim then deletes no unit, as a pointer into
/// any of them might stay.
struct UnitLinks {
    struct Found {
        var link: PointerLink
        var companions: [[UInt8]]
    }

    private(set) var found: [Found] = []
    /// The first thing that could not be read, as a sentence naming it.
    private(set) var problem: String?
    /// Resolves what the links say (it holds the verified descriptors).
    var resolver: PointerResolver
    private let extensions: Set<[UInt8]>
    private let buffer = DirectoryBuffer()

    init(_ resolver: PointerResolver, extensions: [String]) {
        self.resolver = resolver
        self.extensions = Set(extensions.map { Array($0.utf8) })
    }

    /// Lists the folders `globs` match, and every folder below each, for links.
    mutating func scan(folders globs: [String], _ ledger: SizeLedger) {
        for n in Self.pointerFolders(globs, under: resolver.rootNode, ledger) {
            list(n, ledger)
            if problem != nil { return }
        }
    }

    /// Releases the descriptors.
    mutating func close() { resolver.close() }

    /// The folders below `top` that `globs` match (relative to the root: a leading `/` is implied), and all below
    /// each. Matches are looked for only as deep as the globs reach (`**` reaches everywhere).
    static func pointerFolders(_ globs: [String], under top: NodeID, _ ledger: SizeLedger) -> [NodeID] {
        let matcher = GlobMatcher(globs.map { $0.hasPrefix("/") ? $0 : "/" + $0 })
        let reach =
            globs.contains { $0.contains("**") } ? Int.max : globs.map { $0.split(separator: "/").count }.max() ?? 0
        var out: [NodeID] = []
        var stack: [(node: NodeID, path: [UInt8], level: Int)] = [(top, [], 0)]
        while let (n, path, level) = stack.popLast() {
            if level > 0 && matcher.matches(path) {
                ledger.forEachNode(under: n) { out.append($0) }
                continue
            }
            guard level < reach else { continue }
            ledger.node(n).subdirs.forEach { raw in
                let child = NodeID(raw)
                stack.append((child, PathBytes.join(path, ledger.name(of: child)), level + 1))
            }
        }
        return out
    }

    /// One folder: one listing for its links, regular files and subfolders; then each link read.
    private mutating func list(_ n: NodeID, _ ledger: SizeLedger) {
        let fd: FileDescriptor, listing: OwnedDescriptor
        do throws(Errno) {
            fd = try resolver.directories.open(n, in: ledger)
            listing = try Syscall.reopenForListing(fd)
        } catch { return fail("cannot open", n, nil, error, ledger) }
        var links: [[UInt8]] = [], files: [[UInt8]] = [], unknown: [UInt8]?, unreadable: Errno?
        do throws(Errno) {
            try listing.borrow { (listed) throws(Errno) in
                try Syscall.readDirectory(listed, buffer: buffer) { entry in
                    let name = Array(UnsafeRawBufferPointer(start: entry.name, count: strlen(entry.name)))
                    switch Self.type(of: entry, in: fd) {
                    case .success(UInt8(DT_LNK)): links.append(name)
                    case .success(UInt8(DT_REG)): files.append(name)
                    case .success(UInt8(DT_DIR)):
                        if name.withUnsafeBytes({ ledger.subdirectory(of: n, named: $0) }) == nil {
                            unknown = unknown ?? name
                        }
                    case .failure(let e): unreadable = unreadable ?? e
                    default: break
                    }
                }
            }
        } catch { return fail("cannot list", n, nil, error, ledger) }
        if let unreadable { return fail("cannot read an entry of", n, nil, unreadable, ledger) }
        // A folder not counted yet may hold pointers the trim does not know of.
        if let unknown { return fail("a folder not counted yet:", n, unknown, nil, ledger) }
        guard !links.isEmpty else { return }
        let companions = Self.companions(of: links, among: files, extensions: extensions)
        for name in links {
            guard let link = read(name, in: fd, n, ledger) else {
                if problem != nil { return }
                continue
            }
            found.append(Found(link: link, companions: companions[name] ?? []))
        }
    }

    /// The link `name` of the folder open at `fd`; nil when it is gone or no longer a link (nothing to point with),
    /// or cannot be read (`problem`).
    private mutating func read(_ name: [UInt8], in fd: FileDescriptor, _ n: NodeID, _ ledger: SizeLedger)
        -> PointerLink?
    {
        let got: Result<(ino: UInt64, target: [UInt8])?, Errno> = (name + [0]).withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { Self.link($0.baseAddress!, in: fd) }
        }
        switch got {
        case .success(let link?): return PointerLink(dir: n, name: name, ino: link.ino, target: link.target)
        case .success(nil): return nil
        case .failure(let e): fail("cannot read the link", n, name, e, ledger); return nil
        }
    }

    private mutating func fail(_ what: String, _ n: NodeID, _ name: [UInt8]?, _ error: Errno?, _ ledger: SizeLedger) {
        let path = PathBytes.join(ledger.relativePath(of: n), name ?? [])
        problem = "\(what) \(path.isEmpty ? "." : PathBytes.display(path))" + (error.map { " (\($0))" } ?? "")
    }

    /// The regular files named `<link>.<ext>`, by link: each goes to the link whose name is its longest dot-bounded
    /// prefix; a file whose name is itself a dot-bounded prefix of a link's (`foo.bar` beside the link
    /// `foo.bar.baz`) goes to none; with `extensions`, only `<link>.<ext>` with `ext` listed.
    static func companions(of links: [[UInt8]], among files: [[UInt8]], extensions: Set<[UInt8]>) -> [[UInt8]:
        [[UInt8]]]
    {
        let dot = UInt8(ascii: ".")
        let names = Set(links)
        var prefixes = Set<ArraySlice<UInt8>>()
        for link in links { for i in link.indices where i > 0 && link[i] == dot { prefixes.insert(link[..<i]) } }
        var out: [[UInt8]: [[UInt8]]] = [:]
        for file in files where !prefixes.contains(file[...]) {
            for i in file.indices.reversed() where i > 0 && file[i] == dot {
                let stem = Array(file[..<i])
                guard names.contains(stem) else { continue }
                if extensions.isEmpty || extensions.contains(Array(file[(i + 1)...])) {
                    out[stem, default: []].append(file)
                }
                break
            }
        }
        return out
    }

    /// `lstat` and `readlinkat` of `name` in `dir`: its inode and target; nil when it is gone or not a link.
    static func link(_ name: UnsafePointer<CChar>, in dir: FileDescriptor) -> Result<
        (ino: UInt64, target: [UInt8])?, Errno
    > {
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(at: dir, name) } catch {
            return error == .noSuchFileOrDirectory ? .success(nil) : .failure(error)
        }
        guard st.isSymlink else { return .success(nil) }
        switch readLink(name, in: dir) {
        case .success(let target): return .success((UInt64(st.st_ino), target))
        case .failure(let e) where e == .noSuchFileOrDirectory || e == .invalidArgument: return .success(nil)
        case .failure(let e): return .failure(e)
        }
    }

    /// `readlinkat(dir, name)`: what the link says (`EINVAL`: not a link).
    static func readLink(_ name: UnsafePointer<CChar>, in dir: FileDescriptor) -> Result<[UInt8], Errno> {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let n = buffer.withUnsafeMutableBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { readlinkat(dir.rawValue, name, $0.baseAddress!, $0.count) }
        }
        if n < 0 { return .failure(Errno(rawValue: errno)) }
        guard n > 0, n < buffer.count else { return .failure(.fileNameTooLong) }
        return .success(Array(buffer[..<n]))
    }

    /// The entry's type from the listing, or its `lstat` where the filesystem lists none (`DT_UNKNOWN` when gone).
    private static func type(of entry: DirectoryEntry, in dir: FileDescriptor) -> Result<UInt8, Errno> {
        guard entry.typeUnknown else { return .success(entry.type) }
        let st: stat
        do throws(Errno) { st = try Syscall.lstat(at: dir, entry.name) } catch {
            return error == .noSuchFileOrDirectory ? .success(UInt8(DT_UNKNOWN)) : .failure(error)
        }
        if st.isSymlink { return .success(UInt8(DT_LNK)) }
        if st.isDirectory { return .success(UInt8(DT_DIR)) }
        return .success(st.isRegularFile ? UInt8(DT_REG) : UInt8(DT_UNKNOWN))
    }
}
