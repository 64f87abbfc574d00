import Foundation
import Glibc
import Testing

/// A stand-in for the Hugging Face hub on 127.0.0.1 (the endpoints huggingface_hub 2.4 calls: a repository's
/// revision and file tree, `HEAD` and `GET` of `resolve/<rev>/<file>` with `X-Repo-Commit` and `ETag`), serving
/// repositories of files whose bytes follow from their names (`shake_256("<repo>/<file>")`), and a reader that
/// loads every repository with the real library: `snapshot_download`, then `hf_hub_download` of each file.
final class FakeHub {
    let server: RunningCLI
    let port: Int
    let tree: TemporaryTree
    /// `org/name=file:size,file:size`, one a repository.
    let repos: [String]

    static var installed: Bool {
        (try? runProcess(which("python3")!, ["-c", "from huggingface_hub.errors import LocalEntryNotFoundError"]))?
            .status == 0
    }

    init(_ tree: TemporaryTree, repos: [String]) throws {
        self.tree = tree
        self.repos = repos
        try Self.read.write(toFile: tree.url("hubread.py"), atomically: true, encoding: .utf8)
        (server, port) = try startLocalServer(tree, script: Self.serve, named: "fakehub.py", arguments: repos)
    }

    func stop() { stopLocalServer(server) }

    /// What one reading of every repository gave: files read with the right bytes, clean misses
    /// (`LocalEntryNotFoundError`), files read with other bytes, and any other error; and per repository, its reads
    /// right and its clean misses.
    struct Reads: Decodable {
        var ok: Int
        var miss: Int
        var wrong: [String]
        var error: [String]
        var repos: [String: [String: Int]]
    }

    /// Reads every repository through the cache `cache` (`HF_HUB_OFFLINE=1` when `offline`).
    func read(cache: String, offline: Bool) throws -> (result: ClientResult, reads: Reads?) {
        let env: [String: String?] = [
            "HF_ENDPOINT": "http://127.0.0.1:\(port)", "HF_HUB_OFFLINE": offline ? "1" : "0",
            "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HOME": tree.url("hf-home"),
        ]
        let r = try runClient(
            which("python3")!, [tree.url("hubread.py"), cache] + repos, dropping: ["HF_"],
            setting: env.merging(noProxy) { a, _ in a })
        let line = r.output.split(separator: "\n").last { $0.hasPrefix("READS ") }
        return (r, line.flatMap { try? JSONDecoder().decode(Reads.self, from: Data($0.dropFirst(6).utf8)) })
    }

    static let serve = #"""
        import hashlib, http.server, json, sys
        COMMIT = "c0ffee" + "0" * 34
        REPOS = {}
        for spec in sys.argv[1:]:
            repo, files = spec.split("=")
            REPOS[repo] = {f.split(":")[0]: int(f.split(":")[1]) for f in files.split(",")}
        def body(repo, name):
            return hashlib.shake_256(f"{repo}/{name}".encode()).digest(REPOS[repo][name])
        class Hub(http.server.BaseHTTPRequestHandler):
            def route(self):
                parts = self.path.split("?")[0].strip("/").split("/")
                if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
                    repo = "/".join(parts[2:4])
                    if repo in REPOS:
                        return json.dumps({"id": repo, "modelId": repo, "sha": COMMIT, "siblings": [{"rfilename": f} for f in REPOS[repo]]}).encode(), {}
                if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree" and "/".join(parts[2:4]) in REPOS:
                    files = REPOS["/".join(parts[2:4])]
                    return json.dumps([{"type": "file", "path": f, "size": n, "oid": "0" * 40} for f, n in files.items()]).encode(), {}
                if len(parts) >= 5 and parts[2] == "resolve":
                    repo, name = "/".join(parts[:2]), "/".join(parts[4:])
                    if name in REPOS.get(repo, {}):
                        b = body(repo, name)
                        return b, {"X-Repo-Commit": COMMIT, "ETag": '"%s"' % hashlib.sha256(b).hexdigest()}
                return None, {}
            def answer(self, send):
                b, headers = self.route()
                if b is None:
                    self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
                self.send_response(200)
                for k, v in headers.items(): self.send_header(k, v)
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                if send: self.wfile.write(b)
            def do_HEAD(self): self.answer(False)
            def do_GET(self): self.answer(True)
            def log_message(self, fmt, *args): sys.stderr.write("%s %s\n" % (self.command, self.path)); sys.stderr.flush()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    static let read = #"""
        import hashlib, json, os, sys
        from huggingface_hub import hf_hub_download, snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
        cache, specs = sys.argv[1], sys.argv[2:]
        out = {"ok": 0, "miss": 0, "wrong": [], "error": [], "repos": {}}
        def check(repo, name, size, path):
            with open(path, "rb") as f:
                if f.read() == hashlib.shake_256(f"{repo}/{name}".encode()).digest(size): count(repo, "ok")
                else: out["wrong"].append(f"{repo}/{name}")
        def count(repo, what):
            out[what] += 1
            out["repos"][repo][what] += 1
        for spec in specs:
            repo, files = spec.split("=")
            files = {f.split(":")[0]: int(f.split(":")[1]) for f in files.split(",")}
            out["repos"][repo] = {"ok": 0, "miss": 0}
            try:
                folder = snapshot_download(repo, cache_dir=cache)
                for name, size in files.items(): check(repo, name, size, os.path.join(folder, name))
            except LocalEntryNotFoundError: count(repo, "miss")
            except Exception as e: out["error"].append(f"{repo}: {type(e).__name__}: {e}")
            for name, size in files.items():
                try: check(repo, name, size, hf_hub_download(repo, name, cache_dir=cache))
                except LocalEntryNotFoundError: count(repo, "miss")
                except Exception as e: out["error"].append(f"{repo}/{name}: {type(e).__name__}: {e}")
        print("READS " + json.dumps(out))
        """#
}
