import Foundation
import Glibc
import Testing

/// The real uv on one cache, by every way a user installs a package: from a local index, from a `--find-links`
/// folder, a wheel by its path, a source tree by its path (built by an in-tree PEP 517 backend: no download),
/// `uv run --with` and `uvx`. Each install goes into a fresh venv (or uv's own cached environment) and is judged
/// by uv's exit status and by the installed packages' RECORD: every file it lists must be there.
struct UVClient {
    let exe: String
    let cache: String
    let work: TemporaryTree
    let index: PipIndex
    let names: [String]

    enum Way: String, CaseIterable {
        case index
        case findLinks = "find-links"
        case pathWheel = "path-wheel"
        case pathSource = "path-source"
        case uvRun = "uv-run"
        case uvx
    }

    /// uv as `pip install uv` installs it, if it is there.
    static var executable: String? { DiscoverRealClientsTests.uvExecutable() }

    init(_ work: TemporaryTree, cache: String, wheels: Int, size: Int) throws {
        exe = try #require(Self.executable, "uv is missing: pip install uv (.ci/deps.sh does)")
        self.cache = cache
        self.work = work
        names = (1...wheels).map { "w\($0)" }
        index = try PipIndex(work, wheelList: names.map { ($0, size) })
        try Self.writeSourceTree(work.url("src/localpkg"))
        work.mkdir("wheels")
        try FileManager.default.copyItem(
            atPath: work.url("index/packages/w1-1.0-py3-none-any.whl"),
            toPath: work.url("wheels/w1-1.0-py3-none-any.whl"))
    }

    func run(_ args: [String]) throws -> ClientResult {
        try runClient(
            exe, args, dropping: ["UV_", "XDG_"],
            setting: [
                "UV_CACHE_DIR": cache, "UV_NO_CONFIG": "1",
                "UV_PYTHON_DOWNLOADS": "never",
            ].merging(noProxy) { a, _ in a },
            in: work.path)
    }

    /// Installs by `way` into venv `venv` (made afresh; `uv run` and `uvx` use uv's cached environments), and
    /// checks the RECORD of what was installed there: the result, and the RECORD files found missing.
    func install(_ way: Way, venv: String) throws -> (result: ClientResult, missing: [String]) {
        let python = which("python3")!, local = ["--no-index", "--find-links", work.url("index/packages")]
        let check = ["python", "-c", Self.recordCheck]
        switch way {
        case .uvRun:
            return judged(
                try run(
                    ["run", "-q", "--no-project", "--python", python] + local + ["--with", names[1]] + check + [
                        names[1]
                    ]))
        case .uvx:
            let r = try run(["tool", "run", "-q", "--python", python, "--from", work.url("src/localpkg"), "localpkg"])
            return (r, r.status == 0 && !r.output.contains("localpkg ok") ? ["localpkg's output: \(r.output)"] : [])
        default: break
        }
        try? FileManager.default.removeItem(atPath: work.url(venv))
        let made = try run(["venv", "-q", "--python", python, work.url(venv)])
        guard made.status == 0 else { return (made, []) }
        let target = ["pip", "install", "-q", "--python", work.url(venv + "/bin/python")]
        let (args, checked): ([String], [String]) =
            switch way {
            case .index: (["--index-url", "http://127.0.0.1:\(index.port)/simple/"] + names, names)
            case .findLinks: (local + names, names)
            case .pathWheel: ([work.url("wheels/w1-1.0-py3-none-any.whl")], ["w1"])
            default: ([work.url("src/localpkg")], ["localpkg"])
            }
        let r = try run(target + args)
        guard r.status == 0 else { return (r, []) }
        let checkRun = try runClient(work.url(venv + "/bin/python"), ["-c", Self.recordCheck] + checked)
        return (r, Self.missing(in: checkRun))
    }

    private func judged(_ r: ClientResult) -> (result: ClientResult, missing: [String]) {
        (r, r.status == 0 ? Self.missing(in: r) : [])
    }

    private static func missing(in r: ClientResult) -> [String] {
        guard let line = r.output.split(separator: "\n").last(where: { $0.hasPrefix("MISSING ") }) else {
            return ["no RECORD check: \(r.output)"]
        }
        return line.split(separator: " ").dropFirst(2).map(String.init)
    }

    /// Prints `MISSING <count> <files…>` for the distributions named in argv: every file their RECORD lists must
    /// be on disk.
    static let recordCheck = """
        import sys, importlib.metadata as m
        missing = [str(f) for n in sys.argv[1:] for f in (m.distribution(n).files or []) if not f.locate().exists()]
        print("MISSING", len(missing), *missing[:5])
        """

    /// A source tree whose `pyproject.toml` names an in-tree build backend (`backend-path`): uv builds it with no
    /// package from anywhere, and the wheel has a console script (`localpkg`) for `uvx`.
    static func writeSourceTree(_ dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try """
        [build-system]
        requires = []
        build-backend = "backend"
        backend-path = ["."]

        [project]
        name = "localpkg"
        version = "1.0"
        """.write(toFile: dir + "/pyproject.toml", atomically: true, encoding: .utf8)
        try backend.write(toFile: dir + "/backend.py", atomically: true, encoding: .utf8)
    }

    static let backend = #"""
        import base64, hashlib, os, zipfile
        NAME, VER = "localpkg", "1.0"
        INFO = f"{NAME}-{VER}.dist-info"
        def _digest(b): return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        def get_requires_for_build_wheel(config_settings=None): return []
        def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
            files = {
                f"{NAME}/__init__.py": b"VALUE = 42\n#" + b"x" * 40000 + b"\n",
                f"{NAME}/cli.py": b"def main():\n    print('localpkg ok')\n",
                f"{INFO}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VER}\n".encode(),
                f"{INFO}/WHEEL": b"Wheel-Version: 1.0\nGenerator: cachewarden-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
                f"{INFO}/entry_points.txt": f"[console_scripts]\nlocalpkg = {NAME}.cli:main\n".encode(),
            }
            files[f"{INFO}/RECORD"] = ("".join(f"{p},{_digest(b)},{len(b)}\n" for p, b in files.items()) + f"{INFO}/RECORD,,\n").encode()
            name = f"{NAME}-{VER}-py3-none-any.whl"
            with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
                for p, b in files.items():
                    z.writestr(p, b)
            return name
        """#
}
