import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The profiles' locks against the real clients: a running `uv run` (its shared `.lock`) and a running `cargo
/// build --offline` (its shared `$CARGO_HOME/.package-cache-mutate`) each hold off a trim of their cache — one
/// `deferred` line naming the client, nothing deleted — until they exit; then the trim runs. No network: uv
/// installs a wheel made here (`--no-index --find-links`), cargo builds a project without dependencies.
@Suite(.serialized) struct ClientLockRealClientTests {
    static let old = Date().timeIntervalSince1970 - 30 * 86_400

    /// Waits for `go` to exist (at most two minutes), having made `ready`: a client held in the middle of its run.
    static func pythonWaiting(ready: String, go: String) -> String {
        "import importlib.metadata, os, time\nimportlib.metadata.version('tiny')\nopen('\(ready)', 'w').close()\nt = time.time()\nwhile not os.path.exists('\(go)') and time.time() - t < 120:\n    time.sleep(0.05)\n"
    }

    @Test(.enabled(if: DiscoverRealClientsTests.uvExecutable() != nil, "needs uv (pip install uv)"))
    func aRunningUvHoldsOffATrimOfItsCacheUntilItExits() throws {
        let work = TemporaryTree("cw-uvwork"), cache = TemporaryTree("cw-uvcache")
        let uv = try #require(DiscoverRealClientsTests.uvExecutable())
        try PipIndex.makeWheels.write(toFile: work.url("make_wheels.py"), atomically: true, encoding: .utf8)
        let made = try runProcess(which("python3")!, [work.url("make_wheels.py"), work.url("index"), "tiny:20000"])
        try #require(made.status == 0, "\(made.err)")
        let (ready, go) = (work.url("ready"), work.url("go"))
        let env: [String: String?] = [
            "UV_CACHE_DIR": cache.path, "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never", "UV_OFFLINE": "1",
        ]
        let client = try RunningCLI(
            [
                "run", "--no-project", "--no-index", "--find-links", work.url("index/packages"), "--with", "tiny",
                "--python", which("python3")!, "python", "-c", Self.pythonWaiting(ready: ready, go: go),
            ],
            executable: uv, environment: env)
        defer { if client.process.isRunning { client.signal(SIGKILL) } }
        try #require(eventually(timeout: 120) { work.exists("ready") }, "uv run did not start: \(client.stderr)")
        #expect(LockHolderProcess.isListed(cache.url(".lock")), "uv run holds no lock on its cache's .lock")
        // Ten old unpacked wheels, 500 kB, beside what uv made: the quota wants most of them gone.
        for i in 0..<10 { cache.write("archive-v0/old\(i)/data.py", size: 50_000, mtime: Self.old + Double(i)) }
        let total = diskTotals(cache.path, basis: .apparent).total
        let before = DiskSnapshot(cache.path)
        let h = try WatcherHarness(cache, quota: total - 100_000, basis: .apparent) {
            $0.profile = .uv
            $0.trimAfterIdle = nil
            $0.trimTo = .bytes(total - 400_000)
        }
        let deferred = try #require(eventually { !h.log.deferrals.isEmpty } ? h.log.deferrals.first : nil)
        #expect(
            deferred.busy.lock == ".lock" && deferred.busy.holders.first?.pid == client.process.processIdentifier
                && deferred.busy.holders.first?.command == "uv", "\(deferred)")
        #expect(h.log.evictions.isEmpty && DiskSnapshot(cache.path).changes(since: before).isEmpty)
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        client.process.waitUntilExit()
        #expect(client.process.terminationStatus == 0, "\(client.stderr)")
        #expect(eventually(timeout: 70) { !h.log.trims.isEmpty }, "no trim after uv exited: \(h.log.names)")
        #expect(
            h.log.evictions.contains { $0.file == "archive-v0/old0" } && h.log.deferrals.count == 1,
            "\(h.log.evictions.map(\.file))")
        print(
            "uv: deferred while `uv run` ran (holder \(deferred.busy.holders)); then \(h.log.trims[0].removed) units evicted of \(total) B"
        )
    }

    @Test(.enabled(if: which("cargo") != nil, "needs cargo"))
    func aCargoBuildHoldsOffATrimOfTheRegistryUntilItEnds() throws {
        let home = TemporaryTree("cw-cargohome"), work = TemporaryTree("cw-cargowork")
        // CARGO_HOME/registry-XXXXXX: its locks are beside it
        let registry = TemporaryTree("registry", under: home.path)
        // Extracted crates (the profile's units; its `.crate` files and index stay).
        for i in 0..<10 {
            registry.write("src/index.crates.io-1/c\(i)-1.0.0/src/lib.rs", size: 50_000, mtime: Self.old + Double(i))
            registry.write("src/index.crates.io-1/c\(i)-1.0.0/.cargo-ok", size: 10, mtime: Self.old + Double(i))
        }
        registry.write("index/index.crates.io-1/config.json", size: 100, mtime: Self.old)
        let (ready, go) = (work.url("ready"), work.url("go"))
        work.write("p/src/main.rs", size: 0)
        try "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"build.rs\"\n"
            .write(toFile: work.url("p/Cargo.toml"), atomically: true, encoding: .utf8)
        try "fn main() {}\n".write(toFile: work.url("p/src/main.rs"), atomically: true, encoding: .utf8)
        try """
        fn main() {
            std::fs::write("\(ready)", b"").unwrap();
            let t = std::time::Instant::now();
            while !std::path::Path::new("\(go)").exists() && t.elapsed().as_secs() < 120 {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        """.write(toFile: work.url("p/build.rs"), atomically: true, encoding: .utf8)
        let client = try RunningCLI(
            ["build", "--offline", "--manifest-path", work.url("p/Cargo.toml")], executable: which("cargo")!,
            environment: ["CARGO_HOME": home.path, "CARGO_TARGET_DIR": work.url("target")])
        defer { if client.process.isRunning { client.signal(SIGKILL) } }
        try #require(
            eventually(timeout: 120) { work.exists("ready") }, "cargo did not run the build script: \(client.stderr)")
        #expect(
            LockHolderProcess.isListed(home.url(".package-cache-mutate")),
            "cargo build holds no lock on .package-cache-mutate")
        let h = try WatcherHarness(registry, quota: 300_000, basis: .apparent) {
            $0.profile = .cargo
            $0.trimAfterIdle = nil
        }
        let deferred = try #require(eventually { !h.log.deferrals.isEmpty } ? h.log.deferrals.first : nil)
        #expect(
            deferred.busy.lock == "../.package-cache-mutate" && deferred.busy.holders.first?.command == "cargo",
            "\(deferred)")
        #expect(h.log.evictions.isEmpty && diskTotals(registry.path).files == 21)
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        client.process.waitUntilExit()
        #expect(client.process.terminationStatus == 0, "\(client.stderr)")
        #expect(eventually(timeout: 70) { !h.log.trims.isEmpty }, "no trim after cargo ended: \(h.log.names)")
        #expect(
            h.log.evictions.first?.file == "src/index.crates.io-1/c0-1.0.0"
                && registry.exists("index/index.crates.io-1/config.json"))
        print(
            "cargo: deferred while `cargo build --offline` ran (holder \(deferred.busy.holders)); then \(h.log.trims[0].removed) units evicted"
        )
        #expect(!isFlocked(home.url(".package-cache-mutate")) && !isFlocked(home.url(".package-cache")))
    }
}
