import Foundation
import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenLedger

/// Where a pointer leads (`evict_pointers`), as the kernel would resolve it — without following it: through a
/// symlinked folder and `..`, through the root's configured path rather than its canonical one, and out of the
/// root and back in by its name.
@Suite struct UnitPointersPathTests {
    /// `wheels/alias` leads into a1's folder `sub`; `wheels/idx/p` says `../alias/../../a2`: by the kernel
    /// `wheels/alias` → `archive-v0/a1/sub`, `..` → `a1`, `..` → `archive-v0`, then `a2` — through a1 into a2 (by
    /// name alone it would be `a2` at the top, nothing). a2 goes first, and `p` with it; `alias` stays with a1.
    @Test func aSymlinkedFolderAndDotDotAreWalkedAsTheKernelWould() throws {
        let tree = TemporaryTree()
        tree.write("archive-v0/a1/sub/data", size: 20_000, mtime: 1_000_010)
        tree.write("archive-v0/a2/data", size: 20_000, mtime: 1_000_000)
        tree.mkdir("wheels/idx")
        symlink("../archive-v0/a1/sub", tree.url("wheels/alias"))
        symlink("../alias/../../a2", tree.url("wheels/idx/p"))
        var st = stat()
        try #require(
            stat(tree.url("wheels/idx/p") + "/data", &st) == 0 && st.st_size == 20_000, "the kernel resolves p into a2")
        let h = try UnitPointersDoubtTests.trimmed(tree, quota: 50_000) { $0.trimTo = .bytes(42_000) }
        #expect(
            h.log.evictions.map(\.file) == ["wheels/idx/p", "archive-v0/a2"] && h.log.evictions.last?.pointers == 1)
        #expect(!tree.exists("wheels/idx/p") && tree.exists("wheels/alias") && tree.exists("archive-v0/a1/sub/data"))
    }

    /// The root is configured through a symlink to its parent: an absolute link through that path leads into the
    /// root as one through its canonical path does; so does a relative one that leaves the root and comes back in
    /// by its name.
    @Test func absoluteLinksThroughTheConfiguredPathAndLinksBackInByName() throws {
        let tree = TemporaryTree(), places = TemporaryTree()
        let rootName = URL(fileURLWithPath: tree.path).lastPathComponent
        try #require(
            symlink(URL(fileURLWithPath: tree.path).deletingLastPathComponent().path, places.url("parent")) == 0)
        let alias = places.url("parent") + "/" + rootName
        for k in 0..<3 { tree.write("archive-v0/a\(k)/data", size: 20_000, mtime: 1_000_000 + Double(k * 10)) }
        tree.mkdir("wheels/idx")
        symlink(alias + "/archive-v0/a0", tree.url("wheels/idx/abs"))
        symlink("../../../\(rootName)/archive-v0/a1", tree.url("wheels/idx/back"))
        symlink(places.url("elsewhere"), tree.url("wheels/idx/out"))
        let h = try UnitPointersDoubtTests.trimmed(tree) {
            $0.path = alias
            $0.trimTo = .bytes(42_000)
        }
        #expect(h.log.evictions.map(\.file) == ["wheels/idx/abs", "archive-v0/a0", "wheels/idx/back", "archive-v0/a1"])
        #expect(h.log.evictions.map(\.pointers) == [nil, 1, nil, 1])
        #expect(!tree.exists("wheels/idx/abs") && !tree.exists("wheels/idx/back") && tree.exists("wheels/idx/out"))
    }

    /// Only the folders the key names are read: a link into a0 from `elsewhere/` or `wheels-old/` (not named) is
    /// no pointer and stays, and a folder there that is not counted (excluded) keeps no unit, as one under
    /// `wheels/` would (`aPointerFolderThatCannotBeReadKeepsEveryUnit`).
    @Test func onlyTheNamedFoldersAreReadForPointers() throws {
        let tree = TemporaryTree()
        UnitPointersDoubtTests.archives(tree)
        for folder in ["elsewhere", "wheels-old"] {
            tree.mkdir("\(folder)/hidden")
            symlink("../archive-v0/a0", tree.url("\(folder)/q"))
            symlink("../../archive-v0/a0", tree.url("\(folder)/hidden/q"))
        }
        let h = try UnitPointersDoubtTests.trimmed(tree) {
            $0.exclude = ["elsewhere/hidden", "elsewhere/hidden/**", "wheels-old/hidden", "wheels-old/hidden/**"]
        }
        #expect(h.log.evictions.map(\.file) == ["wheels/idx/p0.rev", "wheels/idx/p0", "archive-v0/a0"])
        #expect(h.log.all.filter { $0.name == "error" }.isEmpty)
        for link in ["elsewhere/q", "elsewhere/hidden/q", "wheels-old/q", "wheels-old/hidden/q"] {
            var st = stat()
            #expect(lstat(tree.url(link), &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK, "\(link) was deleted")
        }
    }

    /// The resolver alone, on a ledger made by hand: `..` past the root leaves it for its real parent and its name
    /// leads back in; a target through a counted file, or through nothing, ends there.
    @Test func theResolverWalksTheLedgersFolders() throws {
        let tree = TemporaryTree()
        tree.write("archive-v0/a0/f", size: 10)
        tree.mkdir("wheels")
        var ledger = SizeLedger()
        func ino(_ path: String) throws -> UInt64 { UInt64(try Syscall.lstat(path: tree.url(path)).st_ino) }
        let st = try Syscall.lstat(path: tree.path)
        let top = ledger.addRoot(RootID(0), path: Array(tree.path.utf8), ino: UInt64(st.st_ino), dev: UInt64(st.st_dev))
        func folder(_ name: String, in parent: NodeID, _ path: String) throws -> NodeID {
            let i = try ino(path)
            return Array(name.utf8).withUnsafeBytes { ledger.addDirectory(parent: parent, name: $0, ino: i).node }
        }
        let wheels = try folder("wheels", in: top, "wheels")
        let a0 = try folder("a0", in: try folder("archive-v0", in: top, "archive-v0"), "archive-v0/a0")
        _ = Array("top".utf8).withUnsafeBytes { ledger.record(in: top, named: $0) }
        var resolver = PointerResolver(root: RootID(0), configuredPath: tree.path, ledger)
        defer { resolver.close() }
        let name = URL(fileURLWithPath: tree.path).lastPathComponent
        func units(_ target: String) -> PointerResolver.Resolution {
            resolver.resolve(Array(target.utf8), from: wheels, depth: 2, ledger)
        }
        #expect(units("../archive-v0/a0/f") == .units([a0]))
        #expect(units("../../\(name)/archive-v0/./a0") == .units([a0]))
        #expect(units("\(tree.path)//archive-v0/a0/") == .units([a0]))
        #expect(units("../top/archive-v0/a0") == .units([]), "through a file: ENOTDIR")
        #expect(units("../missing/../archive-v0/a0") == .units([]), "through nothing: ENOENT")
        #expect(units("../../../../../../../../../../..") == .units([]))
    }
}
