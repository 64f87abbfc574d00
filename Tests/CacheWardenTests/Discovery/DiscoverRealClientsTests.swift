import Foundation
import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// A fake home whose pip, Go, ccache and uv caches were made by the real clients at their default places (HOME set
/// to the fake home, every variable that would move them removed): `cachewarden discover` finds each with its
/// profile and measures what a scan measures, changing nothing; `--write` makes a config (at the user's default
/// place), which `check` accepts and `run` enforces.
@Suite(.serialized) struct DiscoverRealClientsTests {
    /// The variables that would move a cache away from its default place, or configure the clients.
    static let moving = ["XDG_", "PIP_", "UV_", "GO", "CGO_", "CCACHE_"]

    /// uv, as `pip install uv` installs it (.ci/deps.sh does).
    static func uvExecutable() -> String? {
        guard let r = try? runProcess(which("python3")!, ["-c", "import uv; print(uv.find_uv_bin())"]), r.status == 0
        else { return nil }
        return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs each client with HOME = `home`: pip and uv install two wheels from a local index, go builds a
    /// program, ccache compiles two C files.
    static func makeCaches(in home: TemporaryTree, work: TemporaryTree) throws -> [String: Double] {
        let index = try PipIndex(work, wheels: ["alpha": 40_000, "beta": 60_000])
        defer { index.stop() }
        let env: [String: String?] = ["HOME": home.path, "PATH": ProcessInfo.processInfo.environment["PATH"]].merging(
            noProxy
        ) { a, _ in a }
        let url = "http://127.0.0.1:\(index.port)/simple/"
        var seconds: [String: Double] = [:]
        func client(
            _ name: String, _ path: String, _ args: [String], extra: [String: String?] = [:], in dir: String? = nil
        ) throws {
            let r = try runClient(path, args, dropping: moving, setting: env.merging(extra) { _, b in b }, in: dir)
            try #require(r.status == 0, "\(name) \(args): \(r.output)")
            seconds[name, default: 0] += r.seconds
        }
        try client(
            "pip", pipExecutable()!,
            [
                "download", "alpha", "beta", "-d", work.url("pip-dl"), "--index-url", url, "--trusted-host",
                "127.0.0.1",
                "--no-deps", "--disable-pip-version-check", "--progress-bar", "off",
            ],
            extra: ["PIP_CONFIG_FILE": "/dev/null"])
        let uv = try #require(uvExecutable(), "uv is missing: pip install uv (.ci/deps.sh does)")
        let uvEnv: [String: String?] = ["UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never"]
        try client("uv", uv, ["venv", "-q", "--python", which("python3")!, work.url("venv")], extra: uvEnv)
        try client(
            "uv", uv,
            ["pip", "install", "-q", "--python", work.url("venv/bin/python"), "--index-url", url, "alpha", "beta"],
            extra: uvEnv)
        work.writeText("gomod/go.mod", "module example.com/discover\n\ngo 1.19\n")
        work.writeText("gomod/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n")
        try client(
            "go", which("go")!, ["build", "-o", work.url("hi"), "."],
            extra: [
                "GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0",
                "GOROOT": ProcessInfo.processInfo.environment["GOROOT"],
            ], in: work.url("gomod"))
        for i in 0..<2 {
            work.writeText("c/f\(i).c", "int f\(i)(int x) { return x * \(i + 3); }\n")
            try client(
                "ccache", which("ccache")!, ["gcc", "-O2", "-c", work.url("c/f\(i).c"), "-o", work.url("c/f\(i).o")],
                extra: ["XDG_RUNTIME_DIR": nil])
        }
        return seconds
    }

    @Test func discoverFindsTheRealCachesAndItsConfigIsCheckedAndEnforced() throws {
        let home = TemporaryTree("cw-realhome"), work = TemporaryTree("cw-realwork")
        let made = try Self.makeCaches(in: home, work: work)
        let real = try Syscall.canonicalPath(home.path)
        let env: [String: String?] = [
            "HOME": real, "XDG_CONFIG_HOME": nil, "XDG_CACHE_HOME": nil, "XDG_RUNTIME_DIR": nil,
            "PIP_CACHE_DIR": nil, "GOCACHE": nil, "CCACHE_DIR": nil, "UV_CACHE_DIR": nil,
        ]
        let before = DiskSnapshot(real)
        let start = Date()
        let r = try runProcess(cachewardenBinary(), ["discover", "--home", real, "--json"], environment: env)
        let elapsed = Date().timeIntervalSince(start)
        try #require(r.status == 0, "\(r.err)")
        #expect(DiskSnapshot(real).changes(since: before) == [], "discover changed the disk")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let caches = try #require(doc["caches"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: caches.map { ($0["name"] as! String, $0) })
        for (name, folder) in [
            ("pip", ".cache/pip"), ("uv", ".cache/uv"), ("go", ".cache/go-build"), ("ccache", ".cache/ccache"),
        ] {
            let c = try #require(byName[name], "\(name) not found in \(r.out)")
            #expect(
                c["path"] as? String == real + "/" + folder && c["profile"] as? String == name
                    && c["source"] as? String == "known")
            let disk = diskTotals(real + "/" + folder, basis: .allocated)
            #expect(
                (c["total"] as? Int).map(Int64.init) == disk.total && c["files"] as? Int == disk.files,
                "\(name): \(c) vs \(disk)")
        }
        // Other tools run here may have left tagged caches too (fontconfig writes a CACHEDIR.TAG); nothing else is
        // found.
        #expect(
            caches.allSatisfy {
                ["pip", "uv", "go", "ccache"].contains($0["name"] as! String) || $0["source"] as? String == "tagged"
            }, "\(byName.keys.sorted())")
        print(
            "discover on a real home: \(byName.keys.sorted().map { "\($0) \(byName[$0]!["total"]!) B/\(byName[$0]!["files"]!) files" }) in \(String(format: "%.3f", elapsed)) s; clients took \(made.mapValues { String(format: "%.1f s", $0) })"
        )

        let conf = real + "/.config/cachewarden/cachewarden.conf"
        let wrote = try runProcess(
            cachewardenBinary(), ["discover", "--home", real, "--write", conf], environment: env)
        try #require(wrote.status == 0, "\(wrote.err)")
        #expect(
            try runProcess(cachewardenBinary(), ["discover", "--home", real, "--write", conf], environment: env).status
                == 2, "an existing file needs --force")
        // The default config's lookup (root's /etc, a user's ~/.config) is DefaultConfigCLITests' subject: named here.
        let check = try runProcess(cachewardenBinary(), ["check", "--config", conf], environment: env)
        #expect(check.status == 0, "\(check.err)")
        for name in ["pip", "uv", "go", "ccache"] { #expect(check.out.contains("dir.\(name).path = \(real)/")) }
        #expect(check.out.contains("dir.uv.evict_unit = depth:2  # from profile uv"))
        try expectRunEnforces(
            conf: conf, pip: real + "/.cache/pip", pipTotal: Int64(byName["pip"]!["total"] as! Int), env: env)
    }

    /// `run` on the written config, with pip's quota lowered below its size: it trims pip at once, under quota.
    private func expectRunEnforces(conf: String, pip folder: String, pipTotal: Int64, env: [String: String?]) throws {
        var text = try String(contentsOfFile: conf, encoding: .utf8)
        let quota = pipTotal / 2
        text = text.replacingOccurrences(
            of: #"dir\.pip\.quota = \S+"#, with: "dir.pip.quota = \(quota)B", options: .regularExpression)
        try text.write(toFile: conf, atomically: true, encoding: .utf8)
        let run = try RunningCLI(["run", "--config", conf], environment: env)
        #expect(
            eventually(timeout: 30) {
                run.lines.contains { $0.contains("\"event\":\"trim\"") && $0.contains("\"dir\":\"pip\"") }
            },
            "no trim of pip: \(run.stdout) \(run.stderr)")
        #expect(run.interrupt() == 0)
        let pip = diskTotals(folder, basis: .allocated)
        #expect(pip.total <= quota, "pip is \(pip.total) B, quota \(quota) B")
    }
}
