import Foundation
import Glibc
import Testing

/// A local sparse cargo registry (python3's http.server over an index and `.crate` files made with tarfile) and a
/// program that depends on every crate in it, built by the real cargo with `CARGO_HOME` inside the test's tree:
/// cargo keeps the index in `registry/index/`, the downloaded `.crate` files in `registry/cache/` and the extracted
/// crates in `registry/src/`.
final class CargoRegistry {
    let tree: TemporaryTree
    let server: RunningCLI
    let port: Int
    let crates: [String]
    var home: String { tree.url("cargo-home") }
    var registry: String { home + "/registry" }

    static var cargo: String? {
        which("cargo")
            ?? [NSHomeDirectory() + "/.cargo/bin/cargo"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `crates` crates of about `size` bytes of source each (random hex: they compress to half).
    init(_ tree: TemporaryTree, crates count: Int, size: Int) throws {
        self.tree = tree
        crates = (1...count).map { "cwc\($0)" }
        try Self.makeCrates.write(toFile: tree.url("make_crates.py"), atomically: true, encoding: .utf8)
        let made = try runProcess(
            which("python3")!, [tree.url("make_crates.py"), tree.url("www")] + crates.map { "\($0):\(size)" })
        try #require(made.status == 0, "make_crates.py: \(made.err)")
        (server, port) = try startLocalServer(
            tree, script: PipIndex.serve, named: "serve.py", arguments: [tree.url("www")])
        tree.writeText("www/index/config.json", "{\"dl\":\"http://127.0.0.1:\(port)/dl/{crate}-{version}.crate\"}\n")
        tree.writeText(
            "cargo-home/config.toml", "[registries.local]\nindex = \"sparse+http://127.0.0.1:\(port)/index/\"\n")
        let deps = crates.map { "\($0) = { version = \"0.1\", registry = \"local\" }" }.joined(separator: "\n")
        tree.writeText(
            "app/Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\(deps)\n")
        tree.writeText(
            "app/src/main.rs", "fn main() { println!(\"{}\", 0\(crates.map { " + \($0)::len()" }.joined())); }\n")
    }

    func stop() { stopLocalServer(server) }

    /// `cargo ARGS` in the program's folder, with no cargo or rustup setting of the machine but the toolchain's.
    func run(_ args: [String]) throws -> ClientResult {
        let env: [String: String?] = [
            "CARGO_HOME": home, "CARGO_TERM_COLOR": "never",
            "RUSTUP_HOME": ProcessInfo.processInfo.environment["RUSTUP_HOME"]
                ?? NSHomeDirectory() + "/.rustup",
            "RUSTUP_TOOLCHAIN": ProcessInfo.processInfo.environment["RUSTUP_TOOLCHAIN"],
        ]
        return try runClient(
            Self.cargo!, args, dropping: ["CARGO", "RUST"], setting: env.merging(noProxy) { a, _ in a },
            in: tree.url("app"))
    }

    /// `cargo build --offline` into a fresh target folder (so rustc reads every crate's source), then the program
    /// run: the result, and whether it printed the sum of the crates' sizes (the right bytes were compiled).
    func buildOffline(_ target: String, expected: Int) throws -> (result: ClientResult, right: Bool) {
        try? FileManager.default.removeItem(atPath: tree.url(target))
        let r = try run(["build", "--offline", "-q", "--target-dir", tree.url(target)])
        guard r.status == 0 else { return (r, false) }
        let out = try runClient(tree.url(target + "/debug/app"), [])
        return (r, out.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(expected)")
    }

    /// Writes `www/`: per crate `dl/<name>-0.1.0.crate` (`src/lib.rs` holds `DATA`, `size / 2` random bytes in hex,
    /// and `len()`), and its index line under `index/` (names of 4+ characters: `ab/cd/<name>`).
    static let makeCrates = #"""
        import hashlib, io, json, os, sys, tarfile
        www = sys.argv[1]
        os.makedirs(f"{www}/dl", exist_ok=True)
        for spec in sys.argv[2:]:
            name, size = spec.split(":")
            files = {
                "Cargo.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'.encode(),
                "src/lib.rs": f'pub const DATA: &str = "{os.urandom(int(size) // 2).hex()}";\npub fn len() -> usize {{ DATA.len() }}\n'.encode(),
            }
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as t:
                for p, b in files.items():
                    info = tarfile.TarInfo(f"{name}-0.1.0/{p}")
                    info.size, info.mtime = len(b), 1_600_000_000
                    t.addfile(info, io.BytesIO(b))
            data = buf.getvalue()
            with open(f"{www}/dl/{name}-0.1.0.crate", "wb") as f:
                f.write(data)
            folder = f"{www}/index/{name[:2]}/{name[2:4]}"
            os.makedirs(folder, exist_ok=True)
            line = {"name": name, "vers": "0.1.0", "deps": [], "cksum": hashlib.sha256(data).hexdigest(), "features": {}, "yanked": False}
            with open(f"{folder}/{name}", "w") as f:
                f.write(json.dumps(line) + "\n")
        """#
}
