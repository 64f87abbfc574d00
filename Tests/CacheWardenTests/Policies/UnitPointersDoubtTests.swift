import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// `evict_pointers` when in doubt: anything about a unit's pointers that cannot be checked, or that the user keeps,
/// keeps the unit — and its pointers. Real folders; each trim is a quota trim started by one write.
@Suite struct UnitPointersDoubtTests {
    /// Three archives `a0` (oldest) … `a2`, each with a pointer `wheels/idx/p<k>` and its `.rev`, and a young `a9`.
    static func archives(_ tree: TemporaryTree, count: Int = 3) {
        tree.mkdir("wheels/idx")
        for k in 0..<count {
            tree.write("archive-v0/a\(k)/data", size: 20_000, mtime: 1_000_000 + Double(k * 10))
            symlink("../../archive-v0/a\(k)", tree.url("wheels/idx/p\(k)"))
            tree.write("wheels/idx/p\(k).rev", size: 100, mtime: 1_000_001 + Double(k * 10))
        }
    }

    /// A watcher on `tree` (units two deep, pointers in `pointers`), after the one trim a write of the young
    /// `archive-v0/a9` (20,000 B) starts: by default one archive of three goes.
    static func trimmed(
        _ tree: TemporaryTree, quota: Int64 = 70_000, pointers: [String] = ["wheels"],
        _ configure: (inout DirectorySettings) -> Void = { _ in }
    ) throws -> WatcherHarness {
        let h = try WatcherHarness(tree, quota: quota, basis: .apparent) {
            $0.evictUnit = .depth(2)
            $0.evictPointers = pointers
            $0.trimTo = .bytes(61_000)
            configure(&$0)
        }
        tree.write("archive-v0/a9/data", size: 20_000)
        #expect(eventually { !h.log.trims.isEmpty })
        return h
    }

    /// The `evict` lines by unit: each unit's line (it has `files`) with the lines just before it, of its pointers'
    /// files and links (each a line of its own, `size` 0 for a link).
    static func byUnit(_ lines: [Eviction]) -> [(unit: String, pointers: Set<String>)] {
        var out: [(unit: String, pointers: Set<String>)] = [], pending = Set<String>()
        for line in lines {
            guard line.files != nil else { pending.insert(line.file); continue }
            out.append((line.file, pending))
            pending = []
        }
        #expect(pending.isEmpty, "pointer lines with no unit after them: \(pending)")
        return out
    }

    /// `foo` and `foo.bar` are both links; `foo.bar.rev` is the record of `foo.bar`, never of `foo`.
    @Test func aCompanionGoesToTheLinkWithTheLongestName() throws {
        let links: [[UInt8]] = ["foo", "foo.bar", "a.b.c"].map { Array($0.utf8) }
        let files = ["foo.rev", "foo.lock", "foo.bar.rev", "foo.bar.baz.x", "a.b", "a.b.c.rev", "food.rev"].map {
            Array($0.utf8)
        }
        func named(_ m: [[UInt8]: [[UInt8]]]) -> [String: Set<String>] {
            Dictionary(
                uniqueKeysWithValues: m.map {
                    (String(decoding: $0.key, as: UTF8.self), Set($0.value.map { String(decoding: $0, as: UTF8.self) }))
                })
        }
        #expect(
            named(UnitLinks.companions(of: links, among: files, extensions: [])) == [
                "foo": ["foo.rev", "foo.lock"], "foo.bar": ["foo.bar.rev", "foo.bar.baz.x"], "a.b.c": ["a.b.c.rev"],
            ],
            "a.b is a prefix of the link a.b.c: no one's")
        #expect(
            named(UnitLinks.companions(of: links, among: files, extensions: [Array("rev".utf8)])) == [
                "foo": ["foo.rev"], "foo.bar": ["foo.bar.rev"], "a.b.c": ["a.b.c.rev"],
            ])

        // On disk: the trim takes a0 with `foo` and `foo.rev`; `foo.bar` and `foo.bar.rev` stay with a1.
        let tree = TemporaryTree()
        tree.mkdir("wheels/idx")
        for (k, link) in ["foo", "foo.bar"].enumerated() {
            tree.write("archive-v0/a\(k)/data", size: 20_000, mtime: 1_000_000 + Double(k * 10))
            symlink("../../archive-v0/a\(k)", tree.url("wheels/idx/\(link)"))
            tree.write("wheels/idx/\(link).rev", size: 100, mtime: 1_000_001 + Double(k * 10))
        }
        let h = try Self.trimmed(tree, quota: 50_000) { $0.trimTo = .bytes(42_000) }
        #expect(
            h.log.evictions.map(\.file) == ["wheels/idx/foo.rev", "wheels/idx/foo", "archive-v0/a0"],
            "companion, link, unit")
        #expect(h.log.evictions.map(\.size) == [100, 0, 20_000] && h.log.evictions.map(\.files) == [nil, nil, 1])
        #expect(!tree.exists("wheels/idx/foo") && !tree.exists("wheels/idx/foo.rev"))
        #expect(
            tree.exists("wheels/idx/foo.bar") && tree.exists("wheels/idx/foo.bar.rev")
                && tree.exists("archive-v0/a1/data"))
    }

    /// The link is swapped for a regular file after the trim listed it, before it goes (the veto hook is asked
    /// about the link last, just before the unit's look): the unit, the file and the `.rev` stay.
    @Test func aLinkReplacedByAFileBeforeItGoesKeepsItsUnit() throws {
        let tree = TemporaryTree()
        Self.archives(tree)
        let swapped = tree.url("wheels/idx/p0")
        let h = try Self.trimmed(tree) { d in
            d.shouldEvict = { candidate in
                if candidate.file == "wheels/idx/p0" {
                    unlink(swapped)
                    _ = FileManager.default.createFile(atPath: swapped, contents: Data("not a link".utf8))
                }
                return true
            }
        }
        #expect(
            h.log.evictions.map(\.file) == ["wheels/idx/p1.rev", "wheels/idx/p1", "archive-v0/a1"],
            "a0 stays; a1 goes in its place")
        #expect(tree.exists("archive-v0/a0/data") && tree.exists("wheels/idx/p0.rev"))
        #expect((try? String(contentsOfFile: swapped, encoding: .utf8)) == "not a link")
        #expect(!tree.exists("wheels/idx/p1") && !tree.exists("wheels/idx/p1.rev"))
        #expect(h.log.all.filter { $0.name == "error" }.isEmpty)
    }

    /// The look before anything goes comes before any pointer goes: a0's own file, or its pointer file, rewritten
    /// after the trim counted it (through the veto hook, asked about the unit, then its pointer file, then its
    /// link) keeps a0 with its link and its `.rev`; a1 goes in its place.
    @Test(arguments: [("archive-v0/a0", "archive-v0/a0/data"), ("wheels/idx/p0.rev", "wheels/idx/p0.rev")])
    func aFileRewrittenBeforeTheUnitGoesKeepsItsPointers(asked: String, rewritten: String) throws {
        let tree = TemporaryTree()
        Self.archives(tree)
        let h = try Self.trimmed(tree) { d in
            d.shouldEvict = { candidate in
                if candidate.file == asked { tree.write(rewritten, size: rewritten.hasSuffix(".rev") ? 100 : 20_000) }
                return true
            }
        }
        #expect(
            h.log.evictions.map(\.file) == ["wheels/idx/p1.rev", "wheels/idx/p1", "archive-v0/a1"], "a0 stays whole")
        #expect(tree.exists("archive-v0/a0/data") && tree.exists("wheels/idx/p0") && tree.exists("wheels/idx/p0.rev"))
    }

    /// a0 holds a file that is not counted (excluded): its folder cannot go whole, so its pointer stays too.
    @Test func aUnitThatCannotGoKeepsItsPointers() throws {
        let tree = TemporaryTree()
        Self.archives(tree)
        tree.write("archive-v0/a0/extra.skip", size: 10, mtime: 1_000_000)
        let h = try Self.trimmed(tree) { $0.exclude = ["*.skip"] }
        #expect(Self.byUnit(h.log.evictions).map(\.unit) == ["archive-v0/a1"])
        #expect(tree.exists("wheels/idx/p0") && tree.exists("wheels/idx/p0.rev") && tree.exists("archive-v0/a0/data"))
        #expect(!tree.exists("wheels/idx/p1") && !tree.exists("wheels/idx/p1.rev") && !tree.exists("archive-v0/a1"))
    }

    /// A pointer file not counted (excluded here; a file just written and not statted yet is the same) cannot be
    /// checked before it goes, nor left pointing at nothing: its unit stays.
    @Test func aCompanionNotCountedKeepsItsUnit() throws {
        let tree = TemporaryTree()
        Self.archives(tree)
        tree.write("wheels/idx/p0.http", size: 10, mtime: 1_000_001)
        let h = try Self.trimmed(tree) { $0.exclude = ["*.http"] }
        #expect(Self.byUnit(h.log.evictions).map(\.unit) == ["archive-v0/a1"])
        #expect(tree.exists("wheels/idx/p0") && tree.exists("wheels/idx/p0.rev") && tree.exists("wheels/idx/p0.http"))
    }

    /// A protected link, an excluded link and a protected pointer file (a `.rev`: the profile's kind) each keep
    /// their unit; the next one goes.
    @Test func aProtectedOrExcludedPointerKeepsItsUnit() throws {
        let tree = TemporaryTree()
        Self.archives(tree, count: 4)
        let h = try Self.trimmed(tree, quota: 90_000) {
            $0.protect = ["wheels/idx/p0", "wheels/idx/p2.rev"]
            $0.exclude = ["wheels/idx/p1"]
            $0.pointerExtensions = ["rev"]
            $0.trimTo = .bytes(81_000)
        }
        #expect(Self.byUnit(h.log.evictions).map(\.unit) == ["archive-v0/a3"])
        for k in 0..<3 {
            #expect(
                tree.exists("archive-v0/a\(k)/data") && tree.exists("wheels/idx/p\(k)")
                    && tree.exists("wheels/idx/p\(k).rev"))
        }
        #expect(!tree.exists("wheels/idx/p3") && !tree.exists("wheels/idx/p3.rev"))
    }

    /// A folder of links the ledger does not know yet (made while the watcher did not see it: here, a mount
    /// is not needed — a folder excluded from the count) may hold pointers: no unit goes, and one `error` says why.
    @Test func aPointerFolderThatCannotBeReadKeepsEveryUnit() throws {
        let tree = TemporaryTree()
        Self.archives(tree)
        tree.mkdir("wheels/hidden")
        symlink("../../archive-v0/a0", tree.url("wheels/hidden/p"))
        let h = try Self.trimmed(tree) { $0.exclude = ["wheels/hidden", "wheels/hidden/**"] }
        #expect(h.log.evictions.isEmpty)
        let errors = h.log.all.compactMap {
            if case .error(let e) = $0.kind { return e }; return nil
        }
        // One line a trim (a loaded host may see the write twice: two trims, two lines).
        #expect(
            !errors.isEmpty && errors.allSatisfy { $0.kind == "pointers" && $0.message.contains("wheels/hidden") },
            "\(errors)")
        #expect(tree.exists("archive-v0/a0/data") && tree.exists("wheels/idx/p0"))
    }
}
