import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Where a link leads (`evict_pointers`), walked as the kernel would walk it but through the ledger's folders and
/// never followed: each name a folder the ledger has under the one before (`subdirectory(of:named:)`), `..` its
/// parent (`parent(of:)`); a name the ledger has no folder for is looked at through the verified descriptor of
/// the folder it is in: a symlink there is read (`readlinkat`) and its target walked on (40 links at most, as the
/// kernel), a file or nothing ends the walk, and a folder the ledger does not know makes it uncertain. An absolute
/// target leads into the root through the root's canonical path or the path it was configured with (normalised);
/// `..` past the root leaves it for the root's real parent, and a name may lead back in (`../<root>/…`). Beyond
/// that, outside the root, names are taken as written: a link reaching the root through another symlink outside
/// it is not known to lead into it.
///
/// The result is every unit (a folder at the unit depth) the walk passes through: deleting any of them breaks the
/// link, so it is a pointer of each.
struct PointerResolver {
    enum Resolution: Equatable {
        /// The units the link leads into or through (none: it leads elsewhere, out of the root, or nowhere).
        case units([NodeID])
        /// It cannot be told where it leads, and why.
        case uncertain(String)
    }

    let rootNode: NodeID
    var directories: VerifiedDirectories
    /// The root's canonical path, then its configured one if it differs, as components.
    private let rootPaths: [[[UInt8]]]

    private enum Position {
        case inside(NodeID, level: Int)
        case outside([[UInt8]])
    }

    private enum Entry {
        case end
        case link([UInt8])
        case folder
        case unreadable(Errno)
    }

    private static let dot: [UInt8] = [UInt8(ascii: ".")], dotDot: [UInt8] = [UInt8(ascii: "."), UInt8(ascii: ".")]

    init(root: RootID, configuredPath: String, _ ledger: SizeLedger) {
        let account = ledger.account(root)!
        rootNode = account.rootNode
        directories = VerifiedDirectories(root: root, in: ledger)
        let canonical = Self.components(account.path)
        let configured = Self.components(Array(PathResolver.absolute(configuredPath, relativeTo: "/").utf8))
        rootPaths = configured == canonical || configured.isEmpty ? [canonical] : [canonical, configured]
    }

    mutating func close() { directories.close() }

    /// Where `target`, read from a link in folder `dir`, leads: the units (folders at `depth`) it passes through.
    mutating func resolve(_ target: [UInt8], from dir: NodeID, depth: Int, _ ledger: SizeLedger) -> Resolution {
        var position =
            target.first == PathBytes.separator
            ? Position.outside([]) : .inside(dir, level: ledger.chain(of: dir).count)
        var pending = Self.components(target).reversed() as [[UInt8]]
        var units: [NodeID] = []
        var links = 0
        while let part = pending.popLast() {
            if part == Self.dot { continue }
            switch position {
            case .outside(var path):
                if part == Self.dotDot { _ = path.popLast() } else { path.append(part) }
                position = rootPaths.contains(path) ? .inside(rootNode, level: 0) : .outside(path)
            case .inside(let n, let level) where part == Self.dotDot:
                position =
                    level == 0
                    ? .outside(Array(rootPaths[0].dropLast())) : .inside(ledger.parent(of: n), level: level - 1)
            case .inside(let n, let level):
                if let sub = part.withUnsafeBytes({ ledger.subdirectory(of: n, named: $0) }) {
                    if level + 1 == depth && !units.contains(sub) { units.append(sub) }
                    position = .inside(sub, level: level + 1)
                    continue
                }
                if level == 0 && part.withUnsafeBytes(TrashFolder.isTrashName) { return .units(units) }
                switch entry(part, in: n, ledger) {
                case .end: return .units(units) // a file (beyond it: ENOTDIR), or nothing: the walk ends
                case .link(let next):
                    links += 1
                    guard links <= 40 else { return .units(units) } // ELOOP: the kernel gives up too
                    if next.first == PathBytes.separator { position = .outside([]) }
                    pending += Self.components(next).reversed()
                case .folder:
                    return .uncertain("a link leads through a folder not counted yet: \(display(n, part, ledger))")
                case .unreadable(let e):
                    return .uncertain("cannot read \(display(n, part, ledger)) (\(e)), on the way of a link")
                }
            }
        }
        return .units(units)
    }

    /// What the link `link.name` of `link.dir` says now: nil when it is gone; `.failure` when it cannot be read or
    /// is no longer a link.
    mutating func reread(_ link: PointerLink, _ ledger: SizeLedger) -> Result<[UInt8], Errno>? {
        let fd: FileDescriptor
        do throws(Errno) { fd = try directories.open(link.dir, in: ledger) } catch { return .failure(error) }
        return (link.name + [0]).withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { p -> Result<[UInt8], Errno>? in
                switch UnitLinks.link(p.baseAddress!, in: fd) {
                case .success(let found?): return .success(found.target)
                case .success(nil):
                    return (try? Syscall.lstat(at: fd, p.baseAddress!)) == nil ? nil : .failure(.invalidArgument)
                case .failure(let e): return .failure(e)
                }
            }
        }
    }

    /// What `name` in folder `n` is, where the ledger has no folder of that name.
    private mutating func entry(_ name: [UInt8], in n: NodeID, _ ledger: SizeLedger) -> Entry {
        if name.withUnsafeBytes({ ledger.existingRecord(in: n, named: $0) }) != nil { return .end }
        let fd: FileDescriptor
        do throws(Errno) { fd = try directories.open(n, in: ledger) } catch { return .unreadable(error) }
        return (name + [0]).withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { p -> Entry in
                let st: stat
                do throws(Errno) { st = try Syscall.lstat(at: fd, p.baseAddress!) } catch {
                    return error == .noSuchFileOrDirectory ? .end : .unreadable(error)
                }
                guard st.isSymlink else { return st.isDirectory ? .folder : .end }
                switch UnitLinks.readLink(p.baseAddress!, in: fd) {
                case .success(let target): return .link(target)
                case .failure(let e): return e == .noSuchFileOrDirectory ? .end : .unreadable(e)
                }
            }
        }
    }

    private func display(_ n: NodeID, _ name: [UInt8], _ ledger: SizeLedger) -> String {
        PathBytes.display(PathBytes.join(ledger.relativePath(of: n), name))
    }

    /// A path's non-empty components.
    static func components(_ path: [UInt8]) -> [[UInt8]] {
        path.split(separator: PathBytes.separator).map(Array.init)
    }
}
