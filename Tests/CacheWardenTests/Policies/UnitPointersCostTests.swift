import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// What `evict_pointers` costs a trim, on a synthetic uv-shaped cache: 20,000 archives of 10 files in 3 folders
/// (`archive-v0/<id>/`), each pointed at from its own folder under `wheels-v8/` (a symlink, its `.rev`, its `.lock`).
/// A trim that takes one unit costs what its unit collection costs; its `duration_ms` is printed with and without
/// the key. Run by hand: `CACHEWARDEN_POINTER_BENCH=1 swift test
/// --filter UnitPointersCost` (the trees take about five minutes to make and scan on 2 cores;
/// `CACHEWARDEN_POINTER_ARCHIVES` sets another count).
@Suite(.serialized) struct UnitPointersCostTests {
    static let enabled = ProcessInfo.processInfo.environment["CACHEWARDEN_POINTER_BENCH"] == "1"

    @Test(.enabled(if: enabled, "a benchmark: CACHEWARDEN_POINTER_BENCH=1"))
    func oneUnitCollectionOnAUVShapedCache() throws {
        let archives = Int(ProcessInfo.processInfo.environment["CACHEWARDEN_POINTER_ARCHIVES"] ?? "") ?? 20_000
        var figures: [String] = []
        for pointers in [false, true] {
            let tree = TemporaryTree("cw-ptrcost")
            let made = try runProcess(which("python3")!, ["-c", Self.maker, tree.path, "\(archives)"])
            try #require(made.status == 0, "\(made.err)")
            let total = diskTotals(tree.path, basis: .apparent).total
            let h = try WatcherHarness(tree, quota: total, basis: .apparent) {
                $0.evictUnit = .depth(2)
                $0.protect = ["*.lock"]
                $0.trimTo = .bytes(total - 1) // one archive (1,000 B) goes
                if pointers {
                    $0.evictPointers = Self.uvPointerFolders
                    $0.pointerExtensions = ["rev"] // as uv's profile lists its pointer files: the `.lock` is none
                }
            }
            tree.write("archive-v0/zz-new/data", size: 100) // over the quota by one file: one unit goes
            #expect(eventually(timeout: 120) { !h.log.trims.isEmpty })
            let first = try #require(h.log.trims.first)
            // The oldest archive goes, and with the key its pointer's `.rev` and link first, each on its own line.
            let pointer = "wheels-v8/index/h/p00000/1.0-py3-none-any"
            #expect(
                h.log.evictions.map(\.file) == (pointers ? [pointer + ".rev", pointer] : []) + ["archive-v0/a00000"])
            #expect(first.removed == (pointers ? 3 : 1))
            figures.append("\(pointers ? "with" : "without") evict_pointers: \(first.durationMilliseconds) ms")
            h.watcher.stop()
        }
        print(
            "pointer cost: \(archives) archives × 10 files, \(archives) pointers; one unit collection: \(figures.joined(separator: "; "))"
        )
    }

    static let uvPointerFolders = ["wheels-v*", "sdists-v*", "environments-v*"]

    /// Makes the tree: `archive-v0/a<k>/{pkg/*.py, pkg-1.0.dist-info/*}`, `wheels-v8/index/h/p<k>/1.0-py3-none-any`
    /// (a link to `../../../../archive-v0/a<k>`) with its `.rev` and `.lock`; old mtimes.
    static let maker = #"""
        import os, sys
        root, n = sys.argv[1], int(sys.argv[2])
        def touch(p, t):
            with open(p, "wb") as f: f.write(b"x" * 100)
            os.utime(p, (t, t))
        for k in range(n):
            a = f"{root}/archive-v0/a{k:05}"
            os.makedirs(f"{a}/pkg"); os.makedirs(f"{a}/pkg-1.0.dist-info")
            t = 1_000_000 + k
            for i in range(6): touch(f"{a}/pkg/m{i}.py", t)
            for name in ["METADATA", "RECORD", "WHEEL", "INSTALLER"]: touch(f"{a}/pkg-1.0.dist-info/{name}", t)
            w = f"{root}/wheels-v8/index/h/p{k:05}"
            os.makedirs(w)
            os.symlink(f"../../../../archive-v0/a{k:05}", f"{w}/1.0-py3-none-any")
            touch(f"{w}/1.0-py3-none-any.rev", t)
            touch(f"{w}/1.0-py3-none-any.lock", t)
        """#
}
