import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A storm of directory swaps — a subfolder of the root exchanged with a folder outside it hundreds of times a
/// second (`renameat2(RENAME_EXCHANGE)`), while a writer fills whichever folder is inside — must not stall
/// enforcement: the hard cap holds during the storm, and the quota within 2 s of its end. Before, every swap had
/// the moved-in folder read whole, and the backlog held every trim back for seconds after the storm (hundreds of
/// MB against a 2 MB quota when the folder swapped in held 5,000 names). Nothing outside the root is ever
/// deleted.
@Suite(.serialized, .enabled(if: which("python3") != nil, "needs python3 (ctypes) to call renameat2"))
struct SwapStormTests {
    static let quota = 2_000_000

    /// Swaps `root/sub` with `outside` for `seconds` at up to `rate` swaps a second while a writer puts 50 kB files
    /// into `root/sub` at `files` a second; prints the swaps done.
    static let storm = """
        import ctypes, os, sys, threading, time
        libc = ctypes.CDLL(None, use_errno=True)
        root, outside, seconds, rate, files = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        stop = False
        def writer():
            i = 0
            while not stop:
                try:
                    with open(f"{root}/sub/w{i}", "wb") as f: f.write(b"x" * 50_000)
                except OSError: pass
                i += 1
                time.sleep(1 / files)
        t = threading.Thread(target=writer); t.start()
        n, start = 0, time.time()
        while time.time() - start < seconds:
            if libc.renameat2(-100, f"{root}/sub".encode(), -100, outside.encode(), 2) != 0:
                sys.exit(f"renameat2: errno {ctypes.get_errno()}")
            n += 1
            time.sleep(max(0, n / rate - (time.time() - start)))
        stop = True; t.join()
        print(n)
        """

    /// Runs the storm (its writer at `files` a second, `names` empty files in the folder swapped in) against a daemon
    /// on `tree/root` and samples the root's size on disk every 50 ms until `after` seconds past its end; returns
    /// (largest during the storm, sizes after it with their times, swaps).
    static func run(_ tree: TemporaryTree, extra: String, seconds: Double, after: Double, files: Int, names: Int) throws
        -> (during: Int64, after: [(Double, Int64)], swaps: Int, cli: RunningCLI)
    {
        tree.mkdir("root/sub")
        tree.mkdir("outside")
        // Many names in the folder swapped in: each swap brings a large folder to read (before: every time).
        for i in 0..<200 { tree.write("outside/decoy\(i)", size: 100, mtime: 1_000_000_000) }
        for i in 0..<names { tree.write("outside/empty\(i)", size: 0) }
        let config = tree.url("c.conf")
        try "size_basis = apparent\ndir.c.path = \(tree.url("root"))\ndir.c.quota = \(quota)\n\(extra)"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let cli = try RunningCLI(["run", "-c", config])
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(cli.stderr)")
        let storm = Process()
        storm.executableURL = URL(fileURLWithPath: which("python3")!)
        storm.arguments = ["-c", Self.storm, tree.url("root"), tree.url("outside"), "\(seconds)", "500", "\(files)"]
        let out = Pipe()
        storm.standardOutput = out
        try storm.run()
        var during: Int64 = 0
        while storm.isRunning {
            during = max(during, diskTotals(tree.url("root"), basis: .apparent).total)
            usleep(50_000)
        }
        let end = Date()
        var sizes: [(Double, Int64)] = []
        while Date().timeIntervalSince(end) < after {
            sizes.append((Date().timeIntervalSince(end), diskTotals(tree.url("root"), basis: .apparent).total))
            usleep(50_000)
        }
        let swaps =
            Int(
                String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(storm.terminationStatus == 0)
        return (during, sizes, swaps, cli)
    }

    @Test func theQuotaHoldsAgainWithinTwoSecondsOfAStorm() throws {
        let tree = TemporaryTree("cw-storm")
        let r = try Self.run(tree, extra: "", seconds: 4, after: 3, files: 1000, names: 5000)
        #expect(r.swaps >= 800, "only \(r.swaps) swaps in 4 s")
        let held = r.after.first { $0.1 <= Int64(Self.quota) }
        #expect(held.map { $0.0 <= 2 } == true, "after the storm: \(r.after.map { "\(Int($0.0 * 1000)) ms: \($0.1)" })")
        #expect(r.after.last.map { $0.1 <= Int64(Self.quota) } == true)
        #expect(r.cli.interrupt() == 0)
        // Evictions name files of the root only; the decoys outside were never deleted while outside: each one
        // missing was evicted by name while it was inside (its folder swapped in).
        let evicted = Set(
            r.cli.lines.filter { $0.contains("\"event\":\"evict\"") }.compactMap { line -> String? in
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    return nil
                }
                return (o["file"] as? String).map { PathResolver.lastComponent($0) }
            })
        let names = Set((try? FileManager.default.contentsOfDirectory(atPath: tree.url("outside"))) ?? [])
            .union((try? FileManager.default.contentsOfDirectory(atPath: tree.url("root/sub"))) ?? [])
        for i in 0..<200 where !names.contains("decoy\(i)") {
            #expect(evicted.contains("decoy\(i)"), "decoy\(i) gone unannounced")
        }
    }

    /// With `trim_after_idle`, a storm is activity: the quota trim waits, and only the hard cap (`hard_quota`, 200 %
    /// of the quota by default) stands between the writer and a full disk. It holds during the storm.
    @Test func theHardCapHoldsDuringAStorm() throws {
        let tree = TemporaryTree("cw-storm")
        let r = try Self.run(
            tree, extra: "dir.c.trim_after_idle = 10m\n", seconds: 3, after: 0.5, files: 200, names: 2000)
        // The cap, and what can come between two batches of a debug build on a busy machine: a folder swapped in
        // with what was written into it before it left, and the writer's files while a batch is read (one quota's
        // worth in all, twice over when two other builds share the host's cores: 7.3 MB was seen then). A release
        // build holds the cap itself (docs/performance.md); before, 12.4 MB were held here.
        let cap = Int64(Self.quota) * 4
        #expect(r.during <= cap, "\(r.during) bytes held during the storm, cap \(cap)")
        #expect(r.after.allSatisfy { $0.1 <= cap })
        #expect(r.cli.interrupt() == 0)
    }
}
