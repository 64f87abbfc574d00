import Foundation
import Glibc
@testable import CacheWarden

/// A seeded random mix of file-system operations on a tree (and an `outside` folder things move from and to),
/// with a journal of what each step did, for the failure message of a model test.
struct RandomTreeOperations {
    var g: ModelBasedTotalsTests.Generator
    let tree: TemporaryTree
    let outside: TemporaryTree
    var counter = 0
    var journal: [String] = []
    /// With `opens`: descriptors held open on files of the tree (at most 8), opened and closed at random.
    let opens: Bool
    var held: [Int32] = []

    init(seed: UInt64, tree: TemporaryTree, outside: TemporaryTree, opens: Bool = false) {
        g = ModelBasedTotalsTests.Generator(state: seed)
        self.tree = tree
        self.outside = outside
        self.opens = opens
    }

    mutating func fresh(_ prefix: String) -> String { counter += 1; return "\(prefix)\(counter)" }

    mutating func closeAll() {
        for fd in held { close(fd) }
        held.removeAll()
    }

    /// One random operation.
    mutating func step(_ n: Int) {
        let inv = ModelBasedTotalsTests.inventory(tree.path)
        let dirs = [""] + inv.dirs
        let pick = g.below(opens ? 15 : 13)
        let dir = g.pick(dirs)!
        func inDir(_ name: String) -> String { dir.isEmpty ? name : dir + "/" + name }
        switch pick {
        case 0, 1: let f = inDir(fresh("f")); tree.write(f, size: g.below(20_000)); journal.append("\(n) write \(f)")
        case 2:
            if let f = g.pick(inv.files) { tree.append(f, size: 1 + g.below(5000)); journal.append("\(n) append \(f)") }
        case 3:
            if let f = g.pick(inv.files) { tree.truncate(f, to: g.below(3000)); journal.append("\(n) truncate \(f)") }
        case 4: if let f = g.pick(inv.files) { tree.remove(f); journal.append("\(n) rm \(f)") }
        case 5:
            if let f = g.pick(inv.files) {
                let t = inDir(fresh("r")); _ = Glibc.rename(tree.url(f), tree.url(t));
                journal.append("\(n) mv \(f) \(t)")
            }
        case 6:
            if let d = g.pick(inv.dirs) {
                let target = inDir(fresh("m"))
                if !target.hasPrefix(d + "/") {
                    _ = Glibc.rename(tree.url(d), tree.url(target)); journal.append("\(n) mvdir \(d) \(target)")
                }
            }
        case 7: moveIn(n, into: inDir)
        case 8:
            if let victim = g.below(2) == 0 ? g.pick(inv.files) : g.pick(inv.dirs) {
                _ = Glibc.rename(tree.url(victim), outside.url(fresh("out")))
                journal.append("\(n) move-out \(victim)")
            }
        case 9: let d = inDir(fresh("p")) + "/q/r"; tree.mkdir(d); journal.append("\(n) mkdir \(d)")
        case 10: if let d = g.pick(inv.dirs) { tree.remove(d); journal.append("\(n) rm -r \(d)") }
        case 11:
            if let f = g.pick(inv.files) {
                let t = inDir(fresh("h")); _ = link(tree.url(f), tree.url(t)); journal.append("\(n) ln \(f) \(t)")
            }
        case 12:
            if let f = g.pick(inv.files) {
                let t = inDir(fresh("s")); _ = symlink(tree.url(f), tree.url(t)); journal.append("\(n) ln -s \(f) \(t)")
            }
        case 13:
            if let f = g.pick(inv.files), held.count < 8 {
                let fd = open(tree.url(f), O_RDONLY); if fd >= 0 { held.append(fd) }; journal.append("\(n) open \(f)")
            }
        default: if !held.isEmpty { close(held.remove(at: g.below(held.count))); journal.append("\(n) close") }
        }
    }

    private mutating func moveIn(_ n: Int, into inDir: (String) -> String) {
        let name = fresh("in")
        if g.below(2) == 0 {
            outside.write(name, size: g.below(10_000))
        } else {
            outside.write(name + "/a/x", size: g.below(10_000))
            outside.write(name + "/b", size: g.below(10_000))
        }
        let t = inDir(name)
        _ = Glibc.rename(outside.url(name), tree.url(t))
        journal.append("\(n) move-in \(t)")
    }

    /// What the journal says about the names in `diffs` (lines like `path: …`).
    func related(to diffs: [String]) -> String {
        let names = Set(diffs.flatMap { $0.split(separator: ":")[0].split(separator: "/").map(String.init) })
        let lines = journal.filter { line in names.contains { line.contains($0) } }
        return "steps that touched those names:\n" + Array(lines.suffix(40)).joined(separator: "\n")
    }
}
