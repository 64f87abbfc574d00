import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// The command line as user `nobody` (through setpriv), with a home and a runtime directory in a test folder that
/// user owns: what a user without --config or --dir gets.
struct AsNobody {
    static let uid: UInt32 = 65534
    static let setpriv = which("setpriv")

    /// Why the commands cannot run as `nobody` here (printed once), or nil when they can.
    static let unavailable: String? = {
        let reason: String?
        if geteuid() != 0 {
            reason = "the tests do not run as root, so they cannot switch to user nobody"
        } else if setpriv == nil {
            reason = "no setpriv (util-linux) on PATH"
        } else if getpwuid(uid) == nil {
            reason = "no user \(uid) (nobody) in the user database"
        } else if (try? runProcess(
            setpriv!, ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", cachewardenBinary(), "--version"]))?
            .status != 0
        {
            reason = "user nobody cannot run \(cachewardenBinary()) (a folder on its path is closed to other users)"
        } else {
            reason = nil
        }
        if let reason { print("DefaultConfigCLITests: not running as nobody: \(reason)") }
        return reason
    }()

    let tree = TemporaryTree()
    var home: String { tree.url("home") }
    var runtime: String { tree.url("run") }
    var configFile: String { home + "/.config/cachewarden/cachewarden.conf" }
    var userSocket: String { runtime + "/cachewarden/cachewarden.sock" }

    var environment: [String: String?] {
        [
            "HOME": home, "XDG_RUNTIME_DIR": runtime, "XDG_CONFIG_HOME": nil, "XDG_CACHE_HOME": nil,
            "RUNTIME_DIRECTORY": nil, "NOTIFY_SOCKET": nil, "WATCHDOG_USEC": nil,
        ]
    }

    private var command: [String] {
        ["--reuid=\(Self.uid)", "--regid=\(Self.uid)", "--clear-groups", "--", cachewardenBinary()]
    }

    init() throws {
        tree.mkdir("home/.cache/app")
        tree.mkdir("run")
        try handOver()
        chmod(runtime, 0o700)
    }

    /// Makes everything in the tree the user's (call after writing files as root).
    func handOver() throws {
        #expect(try runProcess("/bin/chown", ["-R", "\(Self.uid):\(Self.uid)", tree.path]).status == 0)
    }

    func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        try runProcess(Self.setpriv!, command + args, environment: environment)
    }

    func start(_ args: [String]) throws -> RunningCLI {
        try RunningCLI(command + args, executable: Self.setpriv!, environment: environment)
    }
}

/// The default config file (root's and a user's), `~` and `$NAME` in a config, and the user's control socket,
/// through real `cachewarden` processes.
@Suite struct DefaultConfigCLITests {
    private func json(_ line: Substring) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    @Test(
        .enabled(
            if: geteuid() == 0 && access("/etc/cachewarden/cachewarden.conf", F_OK) != 0,
            "needs root, and no /etc/cachewarden/cachewarden.conf on this machine"))
    func rootWithoutTheSystemFileGetsOneLineNamingItAndExit2() throws {
        let file = "/etc/cachewarden/cachewarden.conf"
        for args in [["run"], ["check"], ["clear"], ["status"], ["run", "--control-socket", "/tmp/x.sock"]] {
            let r = try runProcess(cachewardenBinary(), args, environment: ["RUNTIME_DIRECTORY": nil])
            #expect(r.status == 2 && r.out.isEmpty, "\(args): \(r)")
            #expect(
                r.err.split(separator: "\n").count == 1 && r.err.contains("no config file at \(file); ")
                    && r.err.contains("`cachewarden discover --write \(file)`"), "\(args): \(r.err)")
        }
        let status = try runProcess(cachewardenBinary(), ["status"], environment: ["RUNTIME_DIRECTORY": nil])
        #expect(
            status.err.hasPrefix(
                "cachewarden: no daemon answers on /run/cachewarden/cachewarden.sock, and no config file"))
    }

    @Test func tildeAndVariablesInAConfigAndALiteralDir() throws {
        let tree = TemporaryTree()
        tree.mkdir(".cache/pip")
        tree.mkdir("srv/a$b")
        // Inside the home (`HOME` is the tree) but not in its cache folder: a tag says it is a cache.
        tree.writeText("srv/a$b/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        let config = tree.url("cw.conf")
        try "dir.pip.path = $XDG_CACHE_HOME/pip\ndir.srv.path = ~/srv/a$$b\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let env: [String: String?] = ["HOME": tree.path, "XDG_CACHE_HOME": nil, "PIP_ROOT": nil]
        let ok = try runProcess(cachewardenBinary(), ["check", "--config", config], environment: env)
        #expect(ok.status == 0 && ok.err.isEmpty, "\(ok.err)")
        #expect(
            ok.out.contains("dir.pip.path = \(tree.path)/.cache/pip\n")
                && ok.out.contains("dir.srv.path = \(tree.path)/srv/a$b\n"))

        try "# cache\ndir.pip.path = ${PIP_ROOT}/pip\n".write(toFile: config, atomically: true, encoding: .utf8)
        let bad = try runProcess(cachewardenBinary(), ["check", "--config", config], environment: env)
        #expect(
            bad.status == 2
                && bad.err
                    == "cachewarden: \(config):2: dir.pip.path: $PIP_ROOT is not set; set it in the environment or write the path out\n",
            "\(bad.err)")

        // --dir is the shell's to expand: `$` and a leading `~` stay as they are.
        let dir = try runProcess(cachewardenBinary(), ["check", "--dir", tree.url("srv/a$b")], environment: env)
        #expect(dir.status == 0 && dir.out.contains("dir.a_b.path = \(tree.path)/srv/a$b\n"), "\(dir)")
    }

    @Test(.enabled(if: AsNobody.unavailable == nil, "needs root, setpriv and a binary user nobody can run"))
    func aUserWithoutAConfigIsToldWhereToWriteOne() throws {
        let user = try AsNobody()
        for args in [["run"], ["check"], ["clear", "--dry-run"]] {
            let r = try user.run(args)
            #expect(r.status == 2 && r.out.isEmpty, "\(args): \(r)")
            #expect(
                r.err
                    == "cachewarden: no config file at \(user.configFile); write one with `cachewarden discover --write \(user.configFile)` or by hand, or give --config FILE or --dir PATH\n",
                "\(args): \(r.err)")
        }
        let status = try user.run(["status"])
        #expect(
            status.status == 2
                && status.err.hasPrefix(
                    "cachewarden: no daemon answers on \(user.userSocket) or /run/cachewarden/cachewarden.sock, and no config file at \(user.configFile);"
                ), "\(status)")
        let trim = try user.run(["trim", "app"])
        #expect(trim.status == 1 && trim.err.contains("no daemon answers on \(user.userSocket) or "), "\(trim)")
    }

    @Test(.enabled(if: AsNobody.unavailable == nil, "needs root, setpriv and a binary user nobody can run"))
    func aUserInstanceRunsFromTheDefaultFileAndAnswersOnTheUsersSocket() throws {
        let user = try AsNobody()
        for i in 0..<10 { user.tree.write("home/.cache/app/f\(i)", size: 10_000, mtime: 1_700_000_000 + Double(i)) }
        user.tree.mkdir("home/.config/cachewarden")
        try "size_basis = apparent\ndir.app.path = $XDG_CACHE_HOME/app\ndir.app.quota = 1MB\n"
            .write(toFile: user.configFile, atomically: true, encoding: .utf8)
        try user.handOver()
        let using = "cachewarden: using \(user.configFile)\n"

        let check = try user.run(["check"])
        #expect(
            check.status == 0 && check.err == using && check.out.contains("dir.app.path = \(user.home)/.cache/app\n"),
            "\(check)")
        let scan = try user.run(["status", "--json"])
        #expect(
            scan.status == 0 && scan.err.hasPrefix(using) && scan.err.contains("scanning the directories instead"),
            "\(scan)")
        #expect(scan.out.split(separator: "\n").first.flatMap(json)?["files"] as? Int == 10, "\(scan.out)")

        let daemon = try user.start(["run"])
        #expect(
            eventually {
                daemon.lines.contains { $0.contains("\"event\":\"ready\"") } && access(user.userSocket, F_OK) == 0
            },
            "not ready: \(daemon.stderr)")
        #expect(daemon.stderr.hasPrefix(using))
        let live = try user.run(["status", "--json"])
        #expect(live.status == 0 && live.err == using, "\(live)")
        #expect(
            live.out.split(separator: "\n").first.flatMap(json)?["watches"] as? Int == 1,
            "only the daemon knows its watches")
        let trim = try user.run(["trim", "app", "--to", "80000B"])
        #expect(
            trim.status == 0 && trim.out.split(separator: "\n").first.flatMap(json)?["removed"] as? Int == 2, "\(trim)")
        #expect(!user.tree.exists("home/.cache/app/f1") && user.tree.exists("home/.cache/app/f2"))
        #expect(try user.run(["reload"]).status == 0)
        #expect(daemon.interrupt() == 0)
        #expect(access(user.userSocket, F_OK) != 0, "the socket outlived the daemon")

        let clear = try user.run(["clear"])
        #expect(clear.status == 0 && clear.out.contains("\"phase\":\"done\""), "\(clear)")
        #expect((0..<10).allSatisfy { !user.tree.exists("home/.cache/app/f\($0)") })
    }
}
