import Glibc
import SystemPackage

/// The symlinks of one root, found by reading its folders through descriptors only (each opened from the root
/// down by `VerifiedDirectories`, listed with `getdents64`, each link read with `readlinkat`): what
/// `evict_pointers` needs to know which units something points into. The ledger counts no symlink, so they are
/// looked for when a trim first collects its units (a listing per folder; types come with the listing).
struct UnitLinks {
    /// One symlink: its folder, its name, what it says, and the regular files beside it named after it with an
    /// extension (`<name>.rev`, `<name>.http`), by name.
    struct Link {
        var dir: NodeID
        var name: [UInt8]
        var target: [UInt8]
        var companions: [[UInt8]]
    }

    /// Every symlink in the folders the ledger knows under `top`.
    static func find(under top: NodeID, root: RootID, _ ledger: SizeLedger) -> [Link] {
        var directories = VerifiedDirectories(root: root, in: ledger)
        defer { directories.close() }
        var nodes: [NodeID] = []
        ledger.forEachNode(under: top) { nodes.append($0) }
        let buffer = DirectoryBuffer()
        var found: [Link] = []
        for n in nodes {
            guard let fd = try? directories.open(n, in: ledger),
                  let listing = try? OwnedDescriptor(Syscall.reopenForListing(fd)) else { continue }
            var links: [[UInt8]] = []
            try? Syscall.readDirectory(listing.fd, buffer: buffer) { entry in
                if typeOf(entry, in: fd) == UInt8(DT_LNK) { links.append(bytes(entry.name)) }
            }
            guard !links.isEmpty else { continue }
            var files: [[UInt8]] = []
            try? Syscall.readDirectory(listing.fd, buffer: buffer) { entry in
                if typeOf(entry, in: fd) == UInt8(DT_REG) { files.append(bytes(entry.name)) }
            }
            for name in links {
                guard let target = (name + [0]).withUnsafeBufferPointer({ b in
                    b.withMemoryRebound(to: CChar.self) { readLink($0.baseAddress!, in: fd) }
                }) else { continue }
                let companions = files.filter { $0.count > name.count + 1 && $0.starts(with: name) && $0[name.count] == UInt8(ascii: ".") }
                found.append(Link(dir: n, name: name, target: target, companions: companions))
            }
        }
        return found
    }

    /// Where `target`, read from a link in the folder at `base` (relative to the root), leads inside the root: its
    /// components, `.` and `..` resolved by name (as the kernel would, the folders on the way being real ones: the
    /// walk follows none). nil when it leads out of the root (an absolute path elsewhere, `..` past the root).
    static func resolve(_ target: [UInt8], from base: [UInt8], rootPath: [UInt8]) -> [ArraySlice<UInt8>]? {
        var parts: [ArraySlice<UInt8>] = []
        var rest = target[...]
        if target.first == PathBytes.separator {
            let prefix = rootPath + [PathBytes.separator]
            guard target.starts(with: prefix) else { return nil }
            rest = target[prefix.count...]
        } else {
            parts = base.split(separator: PathBytes.separator)
        }
        for part in rest.split(separator: PathBytes.separator) {
            if part.elementsEqual(".".utf8) { continue }
            if part.elementsEqual("..".utf8) {
                guard parts.popLast() != nil else { return nil }
                continue
            }
            parts.append(part)
        }
        return parts
    }

    /// `readlinkat(dir, name)`; nil when it is not a link (any more) or cannot be read.
    static func readLink(_ name: UnsafePointer<CChar>, in dir: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let n = buffer.withUnsafeMutableBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { readlinkat(dir, name, $0.baseAddress!, $0.count) }
        }
        guard n > 0, n < buffer.count else { return nil }
        return Array(buffer[..<n])
    }

    private static func typeOf(_ entry: DirectoryEntry, in dir: Int32) -> UInt8 {
        guard entry.typeUnknown else { return entry.type }
        guard let st = try? Syscall.lstat(at: dir, entry.name) else { return UInt8(DT_UNKNOWN) }
        if st.isSymlink { return UInt8(DT_LNK) }
        return st.isRegularFile ? UInt8(DT_REG) : UInt8(DT_UNKNOWN)
    }

    private static func bytes(_ name: UnsafePointer<CChar>) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
    }
}
