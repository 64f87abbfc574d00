import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A seeded random mix of file-system operations against a watched tree; after each round the watcher's totals
/// must equal a fresh scan. `CACHEWARDEN_SOAK_OPS` scales it up (default 2,000 operations), `CACHEWARDEN_SEED`
/// replays a failure (the seed is printed in the failure message).
@Suite struct ModelBasedTotalsTests {
    /// SplitMix64: small, seeded, repeatable.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
        mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[below(items.count)] }
    }

    /// Lists regular files and directories under `root` (relative paths), not following symlinks.
    static func inventory(_ root: String) -> (files: [String], dirs: [String]) {
        var files: [String] = [], dirs: [String] = []
        var stack = [""]
        while let rel = stack.popLast() {
            let full = rel.isEmpty ? root : root + "/" + rel
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: full) else { continue }
            for n in names {
                let r = rel.isEmpty ? n : rel + "/" + n
                var st = stat()
                guard lstat(root + "/" + r, &st) == 0 else { continue }
                if st.st_mode & S_IFMT == S_IFDIR { dirs.append(r); stack.append(r) }
                else if st.st_mode & S_IFMT == S_IFREG { files.append(r) }
            }
        }
        return (files.sorted(), dirs.sorted())
    }

    @Test func randomOperationsKeepTotalsEqualToAFreshScan() throws {
        let env = ProcessInfo.processInfo.environment
        let operations = Int(env["CACHEWARDEN_SOAK_OPS"] ?? "") ?? 2000
        let seed = UInt64(env["CACHEWARDEN_SEED"] ?? "") ?? UInt64(UInt32.random(in: 1...UInt32.max))
        var g = Generator(state: seed)
        let tree = TemporaryTree("cw-model")
        let outside = TemporaryTree("cw-model-out")
        let h = try WatcherHarness(tree, basis: .apparent)
        var counter = 0
        func fresh(_ prefix: String) -> String { counter += 1; return "\(prefix)\(counter)" }
        var journal: [String] = []   // what each step did, for the failure message

        for step in 1...operations {
            let inv = Self.inventory(tree.path)
            let dirs = [""] + inv.dirs
            func inDir(_ name: String) -> String { let d = g.pick(dirs)!; return d.isEmpty ? name : d + "/" + name }
            switch g.below(13) {
            case 0, 1: let f = inDir(fresh("f")); tree.write(f, size: g.below(20_000)); journal.append("\(step) write \(f)")
            case 2: if let f = g.pick(inv.files) { tree.append(f, size: 1 + g.below(5000)); journal.append("\(step) append \(f)") }
            case 3: if let f = g.pick(inv.files) { tree.truncate(f, to: g.below(3000)); journal.append("\(step) truncate \(f)") }
            case 4: if let f = g.pick(inv.files) { tree.remove(f); journal.append("\(step) rm \(f)") }
            case 5: if let f = g.pick(inv.files) { let t = inDir(fresh("r")); _ = Glibc.rename(tree.url(f), tree.url(t)); journal.append("\(step) mv \(f) \(t)") }
            case 6:
                if let d = g.pick(inv.dirs) {
                    let target = inDir(fresh("m"))
                    if !target.hasPrefix(d + "/") { _ = Glibc.rename(tree.url(d), tree.url(target)); journal.append("\(step) mvdir \(d) \(target)") }
                }
            case 7:
                let name = fresh("in")
                if g.below(2) == 0 {
                    outside.write(name, size: g.below(10_000))
                } else {
                    outside.write(name + "/a/x", size: g.below(10_000))
                    outside.write(name + "/b", size: g.below(10_000))
                }
                let t = inDir(name)
                _ = Glibc.rename(outside.url(name), tree.url(t))
                journal.append("\(step) move-in \(t)")
            case 8:
                if let victim = g.below(2) == 0 ? g.pick(inv.files) : g.pick(inv.dirs) {
                    _ = Glibc.rename(tree.url(victim), outside.url(fresh("out")))
                    journal.append("\(step) move-out \(victim)")
                }
            case 9: let d = inDir(fresh("p")) + "/q/r"; tree.mkdir(d); journal.append("\(step) mkdir \(d)")
            case 10: if let d = g.pick(inv.dirs) { tree.remove(d); journal.append("\(step) rm -r \(d)") }
            case 11: if let f = g.pick(inv.files) { let t = inDir(fresh("h")); _ = link(tree.url(f), tree.url(t)); journal.append("\(step) ln \(f) \(t)") }
            default: if let f = g.pick(inv.files) { let t = inDir(fresh("s")); _ = symlink(tree.url(f), tree.url(t)); journal.append("\(step) ln -s \(f) \(t)") }
            }
            if step % 250 == 0 || step == operations {
                let ok = h.totalsMatchDisk(basis: .apparent, timeout: 30)
                let disk = diskTotals(tree.path, basis: .apparent)
                if !ok {
                    let ledger = h.watcher.ledgerFiles("cache")
                    var diffs: [String] = []
                    for f in Self.inventory(tree.path).files {
                        var st = stat()
                        lstat(tree.url(f), &st)
                        if ledger[f]?.bytes != Int64(st.st_size) { diffs.append("\(f): disk \(st.st_size) ledger \(ledger[f].map { String($0.bytes) } ?? "missing") ino \(st.st_ino) nlink \(st.st_nlink)") }
                    }
                    for f in ledger.keys where !tree.exists(f) { diffs.append("\(f): only in ledger") }
                    Issue.record("differences: \(diffs)")
                    if let file = env["CACHEWARDEN_JOURNAL"] { try? journal.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8) }
                    let names = Set(diffs.flatMap { $0.split(separator: ":")[0].split(separator: "/").map(String.init) })
                    let related = journal.filter { line in names.contains { line.contains($0) } }
                    Issue.record(Comment(rawValue: "steps that touched those names:\n" + Array(related.suffix(40)).joined(separator: "\n")))
                }
                #expect(ok, "seed \(seed) (CACHEWARDEN_SEED=\(seed)), step \(step): watcher \(h.total) B/\(h.files) files, disk \(disk.total) B/\(disk.files) files")
                if !ok { return }
            }
        }
    }
}
