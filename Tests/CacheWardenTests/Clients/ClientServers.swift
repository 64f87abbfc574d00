import Foundation
import Glibc
import Testing

// The servers the client profile tests drive: a local pip index and nginx as a caching proxy.
func pipExecutable() -> String? { which("pip3") ?? which("pip") }

/// A local "simple" index served by python3's http.server with `Cache-Control: max-age=600`, and wheels made
/// with zipfile: `<name>-1.0-py3-none-any.whl` holding `<name>/__init__.py` of random bytes and a dist-info.
final class PipIndex {
    let server: RunningCLI
    let port: Int

    convenience init(_ tree: TemporaryTree, wheels: KeyValuePairs<String, Int>) throws {
        try self.init(tree, wheelList: wheels.map { ($0.key, $0.value) })
    }

    init(_ tree: TemporaryTree, wheelList wheels: [(name: String, size: Int)]) throws {
        let www = tree.url("index")
        tree.mkdir("index")
        try Self.makeWheels.write(toFile: tree.url("make_wheels.py"), atomically: true, encoding: .utf8)
        let made = try runProcess(
            which("python3")!, [tree.url("make_wheels.py"), www] + wheels.map { "\($0.name):\($0.size)" })
        try #require(made.status == 0, "make_wheels.py: \(made.err)")
        (server, port) = try startLocalServer(tree, script: Self.serve, named: "serve.py", arguments: [www])
    }

    func stop() { stopLocalServer(server) }

    /// `pip download NAMES -d DIR --index-url http://127.0.0.1:PORT/simple/ …` with `PIP_CACHE_DIR = cache` and
    /// no pip configuration of the machine (files or `PIP_*` variables).
    func download(_ names: [String], cache: String, into dir: String) throws -> ClientResult {
        let env: [String: String?] = ["PIP_CACHE_DIR": cache, "PIP_CONFIG_FILE": "/dev/null"].merging(noProxy) { a, _ in
            a
        }
        return try runClient(
            pipExecutable()!,
            ["download"] + names + [
                "-d", dir, "--index-url", "http://127.0.0.1:\(port)/simple/", "--trusted-host", "127.0.0.1",
                "--no-deps", "--disable-pip-version-check", "--progress-bar", "off",
            ], dropping: ["PIP_"], setting: env)
    }

    /// How many times the server sent `name`'s wheel (not counting revalidations).
    func wheelGets(_ name: String) -> Int {
        server.stderr.split(separator: "\n").filter {
            $0.contains("GET /packages/\(name)-1.0-py3-none-any.whl ") && $0.contains(" 200 ")
        }.count
    }

    static let makeWheels = #"""
        import base64, hashlib, os, sys, zipfile
        root = sys.argv[1]
        for spec in sys.argv[2:]:
            name, size = spec.split(":")
            info = f"{name}-1.0.dist-info"
            files = {
                f"{name}/__init__.py": b"#" + os.urandom(int(size)),
                f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
                f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: cachewarden-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            }
            digest = lambda b: "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
            files[f"{info}/RECORD"] = ("".join(f"{p},{digest(b)},{len(b)}\n" for p, b in files.items()) + f"{info}/RECORD,,\n").encode()
            wheel = f"{name}-1.0-py3-none-any.whl"
            os.makedirs(f"{root}/packages", exist_ok=True)
            with zipfile.ZipFile(f"{root}/packages/{wheel}", "w", zipfile.ZIP_STORED) as z:
                for p, b in files.items():
                    z.writestr(p, b)
            os.makedirs(f"{root}/simple/{name}", exist_ok=True)
            with open(f"{root}/simple/{name}/index.html", "w") as f:
                f.write(f'<!DOCTYPE html><html><body><a href="../../packages/{wheel}">{wheel}</a></body></html>\n')
        """#

    static let serve = #"""
        import functools, http.server, sys
        class Handler(http.server.SimpleHTTPRequestHandler):
            def end_headers(self):
                self.send_header("Cache-Control", "max-age=600")
                super().end_headers()
            def log_message(self, fmt, *args):
                sys.stderr.write(" ".join(str(a) for a in args) + "\n")
                sys.stderr.flush()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=sys.argv[1]))
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#
}

/// Writes `script` into the tree as `named` and runs it with python3 and `arguments`: a server on 127.0.0.1 that
/// prints its port on its first line.
func startLocalServer(_ tree: TemporaryTree, script: String, named: String, arguments: [String]) throws -> (
    RunningCLI, Int
) {
    try script.write(toFile: tree.url(named), atomically: true, encoding: .utf8)
    let server = try RunningCLI([tree.url(named)] + arguments, executable: which("python3")!)
    try #require(eventually { server.lines.first.flatMap { Int($0) } != nil }, "\(named): \(server.stderr)")
    return (server, Int(server.lines[0])!)
}

/// SIGKILL: the child inherits the test runner's blocked signals, so python never sees a SIGTERM, and the
/// server holds nothing that needs a clean exit.
func stopLocalServer(_ server: RunningCLI) {
    server.signal(SIGKILL)
    server.process.waitUntilExit()
}

func nginxExecutable() -> String? {
    which("nginx")
        ?? ["/usr/sbin/nginx", "/usr/local/sbin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// nginx in the foreground with everything inside the tree: an upstream server for `www/` and a caching proxy
/// whose `proxy_cache_path` is `cache/`.
final class NginxProxy {
    let process: RunningCLI
    let cache: String
    let port: Int
    private let errorLog: String

    init(_ tree: TemporaryTree) throws {
        let upstream = freePort()
        var proxy = freePort()
        while proxy == upstream { proxy = freePort() }
        port = proxy
        cache = tree.url("cache")
        errorLog = tree.url("logs/error.log")
        for dir in ["cache", "temp", "logs"] { tree.mkdir(dir) }
        let conf = tree.url("nginx.conf")
        try Self.config(tree, upstream: upstream, proxy: proxy).write(toFile: conf, atomically: true, encoding: .utf8)
        process = try RunningCLI(
            ["-p", tree.path, "-c", conf, "-e", errorLog, "-g", "daemon off;"], executable: nginxExecutable()!)
        // `/ready` is answered by the proxy server itself (both servers are in the one worker): nothing cached.
        let up = eventually { (try? self.fetch("/ready", tree))?.code == 204 }
        if !up { stop() } // not only the master: its worker would keep the ports
        try #require(up, "nginx did not start: \(process.stderr)")
    }

    static func config(_ tree: TemporaryTree, upstream: Int, proxy: Int) -> String {
        let t = tree.path
        return """
            \(getuid() == 0 ? "user root;" : "")
            worker_processes 1;
            pid \(t)/nginx.pid;
            error_log \(t)/logs/error.log info;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(t)/temp/body;
                proxy_temp_path \(t)/temp/proxy;
                fastcgi_temp_path \(t)/temp/fastcgi;
                uwsgi_temp_path \(t)/temp/uwsgi;
                scgi_temp_path \(t)/temp/scgi;
                proxy_cache_path \(t)/cache levels=1:2 keys_zone=z:1m max_size=1g inactive=1h use_temp_path=off;
                server { listen 127.0.0.1:\(upstream); root \(t)/www; }
                server {
                    listen 127.0.0.1:\(proxy);
                    location = /ready { return 204; }
                    location / {
                        proxy_pass http://127.0.0.1:\(upstream);
                        proxy_cache z;
                        proxy_cache_valid 200 1h;
                        add_header X-Cache-Status $upstream_cache_status always;
                    }
                }
            }
            """
    }

    /// GET through the proxy with curl: status, `X-Cache-Status`, body.
    func fetch(_ path: String, _ tree: TemporaryTree) throws -> (code: Int, cacheStatus: String, body: Data) {
        let bodyFile = tree.url("fetched.bin")
        let r = try runProcess(
            which("curl")!, ["-s", "--noproxy", "*", "-D", "-", "-o", bodyFile, "http://127.0.0.1:\(port)\(path)"])
        let headers = r.out.split(separator: "\r\n")
        let code = headers.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let status =
            headers.first { $0.lowercased().hasPrefix("x-cache-status:") }
            .map { String($0.dropFirst("x-cache-status:".count)).trimmingCharacters(in: .whitespaces) } ?? ""
        return (code, status, (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data())
    }

    /// Error-log lines at `error` level or worse (`crit`, `alert`, `emerg`).
    func seriousLogLines() -> [String] {
        let text = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init).filter {
            ["[error]", "[crit]", "[alert]", "[emerg]"].contains(where: $0.contains)
        }
    }

    /// SIGTERM (nginx's master unblocks signals itself, unlike most children of the test runner); SIGKILL if it
    /// has not exited in 10 s.
    func stop() {
        process.signal(SIGTERM)
        if !eventually(timeout: 10, { !process.process.isRunning }) { process.signal(SIGKILL) }
        process.process.waitUntilExit()
    }
}
