import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// A typo must never wipe a home: paths that cannot be caches are refused by `check`, `run`, `reload` and
/// `Watcher.start` with one line naming the file and line, before anything is read, watched or deleted; the
/// ways out (`CACHEDIR.TAG`, `allow_any_path`) work; and the config reader refuses what is not a small text file.
@Suite struct RefusedPathsTests {
    /// A fake home with files in it (the test's `$HOME`), and a folder of its own for config files (a folder
    /// holding the config file is refused for that reason first).
    struct Home {
        let tree = TemporaryTree()
        let conf = TemporaryTree("cw-conf")
        var home: String { tree.url("home") }
        var environment: [String: String?] {
            ["HOME": home, "XDG_CACHE_HOME": nil, "RUNTIME_DIRECTORY": nil, "NOTIFY_SOCKET": nil]
        }

        init() {
            for i in 0..<12 {
                tree.write("home/Documents/thesis-\(i).tex", size: 20_000, mtime: 1_600_000_000 + Double(i))
            }
            tree.write("home/.cache/app/blob", size: 20_000)
            #expect(symlink("/etc", tree.url("etc-link")) == 0)
        }

        /// Writes `text` as a config file and returns its path.
        func config(_ name: String, _ text: String) throws -> String {
            let path = conf.url(name)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func cli(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            // `timeout`: a regression that hangs (an endless config file) fails the test instead of the run.
            try runProcess("/usr/bin/timeout", ["20", cachewardenBinary()] + args, environment: environment)
        }
    }

    /// (path value, what the one error line must say, whether it is the test's own folder). Only those are run
    /// in enforce mode: were the guard to fail, a real system folder must not lose a file to this test.
    func cases(_ h: Home) -> [(String, String, Bool)] {
        [
            ("/", "/ is the filesystem root", false), ("/etc", "/etc is a top-level system directory", false),
            ("/usr/share/doc", "/usr/share/doc is under /usr, a system directory", false),
            ("/home", "/home is a top-level system directory", false),
            ("/root", "/root is the home directory of user root", false),
            ("~", "\(h.home) is the home directory in $HOME", true),
            ("$HOME", "\(h.home) is the home directory in $HOME", true),
            (h.tree.path, "\(h.tree.path) holds the home directory in $HOME", true),
            ("~/.cache/../..", "\(h.tree.path) holds the home directory in $HOME", true),
            (h.tree.url("etc-link/ssl"), "(which leads to /etc/ssl) is under /etc, a system directory", false),
            (h.conf.path, "holds CacheWarden's own config file", true),
        ]
    }

    @Test func checkAndRunRefuseEachPathWithOneLineAndDeleteNothing() throws {
        let h = Home()
        let before = DiskSnapshot(h.tree.path)
        for (path, complaint, inTree) in cases(h) {
            let config = try h.config(
                "c.conf", "# a slip\nsize_basis = apparent\ndir.c.path = \(path)\ndir.c.quota = 1KB\n")
            for command in inTree ? [["check"], ["run"], ["run", "--dry-run"]] : [["check"], ["run", "--dry-run"]] {
                let r = try h.cli(command + ["-c", config])
                #expect(r.status == 2 && r.out.isEmpty, "\(command) \(path): \(r)")
                #expect(
                    r.err.split(separator: "\n").count == 1 && r.err.hasPrefix("cachewarden: \(config):3: dir.c.path: ")
                        && r.err.contains(complaint), "\(command) \(path): \(r.err)")
            }
        }
        // The same through --dir, with the flag named in the way out.
        let quick = try h.cli(["run", "--dir", h.home, "--quota", "1KB"])
        #expect(
            quick.status == 2 && quick.err.contains("is the home directory in $HOME")
                && quick.err.contains("--allow-any-path"), "\(quick)")
        #expect(DiskSnapshot(h.tree.path).changes(since: before).isEmpty)
    }

    @Test func aRootMayNotHoldTheSocketOrTheMetricsFile() throws {
        let h = Home()
        let app = h.tree.url("home/.cache/app")
        let socket = try h.config("s.conf", "control_socket = \(app)/cw.sock\ndir.app.path = \(app)\n")
        let metrics = try h.config("m.conf", "metrics_file = \(app)/cw.prom\ndir.app.path = \(app)\n")
        #expect(
            try h.cli(["check", "-c", socket]).err.contains(
                "s.conf:2: dir.app.path: \(app) holds CacheWarden's own control socket"))
        #expect(
            try h.cli(["check", "-c", metrics]).err.contains(
                "m.conf:2: dir.app.path: \(app) holds CacheWarden's own metrics file"))
        // A socket given by flag is guarded as well: the watcher refuses to start.
        let flag = try h.config("f.conf", "dir.app.path = \(app)\ndir.app.quota = 1KB\n")
        let r = try h.cli(["run", "-c", flag, "--control-socket", app + "/flag.sock"])
        #expect(
            r.status != 0 && r.err.contains("f.conf:1: dir.app.path: \(app) holds CacheWarden's own control socket"),
            "\(r)")
        #expect(h.tree.exists("home/.cache/app/blob") && !h.tree.exists("home/.cache/app/flag.sock"))
    }

    @Test func aTagOrAllowAnyPathIsTheWayOut() throws {
        let h = Home()
        // allow_any_path: accepted, with one warning line naming the file and line.
        let allowed = try h.config("a.conf", "dir.h.path = ~\ndir.h.allow_any_path = true\n")
        let check = try h.cli(["check", "-c", allowed])
        #expect(check.status == 0 && check.out.contains("dir.h.allow_any_path = true"), "\(check)")
        #expect(
            check.err
                == "cachewarden: warning: \(allowed):1: dir.h.path: \(h.home) is the home directory in $HOME, managed anyway because dir.h.allow_any_path = true\n",
            "\(check.err)")
        let run = try RunningCLI(["run", "--dry-run", "-c", allowed], environment: h.environment)
        #expect(eventually { run.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(run.stderr)")
        #expect(run.interrupt() == 0)
        #expect(run.stderr.components(separatedBy: "managed anyway").count == 2, "one warning: \(run.stderr)")
        // A CACHEDIR.TAG: the folder says it is a cache, and a trim may then delete there — but not in a home, which
        // is protected whatever says it is a cache (only allow_any_path accepts one).
        h.tree.writeText("home/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        let home = try h.cli(["check", "-c", try h.config("h.conf", "dir.h.path = ~\n")])
        #expect(
            home.status == 2 && home.err.contains("is the home directory in $HOME")
                && !home.err.contains("CACHEDIR.TAG"), "\(home)")
        h.tree.writeText("home/Documents/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        let tagged = try h.config("t.conf", "size_basis = apparent\ndir.h.path = ~/Documents\ndir.h.quota = 100KB\n")
        let ok = try h.cli(["check", "-c", tagged])
        #expect(ok.status == 0 && ok.err.isEmpty, "\(ok)")
        let trims = try RunningCLI(["run", "-c", tagged], environment: h.environment)
        #expect(eventually { trims.lines.contains { $0.contains("\"event\":\"trim\"") } }, "\(trims.stderr)")
        #expect(trims.interrupt() == 0)
        #expect(h.tree.exists("home/Documents/CACHEDIR.TAG") && !h.tree.exists("home/Documents/thesis-0.tex"))
    }

    @Test(.enabled(if: AsNobody.unavailable == nil, "needs root, setpriv and a binary user nobody can run"))
    func aUserWithoutPrivilegeIsRefusedTheSame() throws {
        let user = try AsNobody()
        user.tree.write("home/notes.txt", size: 10_000)
        let conf = TemporaryTree("cw-conf")
        let config = conf.url("user.conf")
        let before = DiskSnapshot(user.tree.path)
        for (path, complaint) in [
            ("~", "\(user.home) is the home directory in $HOME"), (user.tree.path, "holds the home directory in $HOME"),
            ("/etc/ssl", "under /etc, a system directory"), ("/var", "/var is a top-level system directory"),
            (conf.path, "holds CacheWarden's own config file"),
        ] {
            try "dir.c.path = \(path)\ndir.c.quota = 1KB\n".write(toFile: config, atomically: true, encoding: .utf8)
            #expect(try runProcess("/bin/chown", ["-R", "\(AsNobody.uid)", conf.path]).status == 0)
            for command in ["check", "run"] {
                let r = try user.run([command, "-c", config])
                #expect(
                    r.status == 2 && r.err.contains("user.conf:1: dir.c.path: ") && r.err.contains(complaint),
                    "\(path): \(r)")
            }
        }
        try "dir.app.path = ~/.cache/app\n".write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try user.run(["check", "-c", config]).status == 0)
        #expect(DiskSnapshot(user.tree.path).changes(since: before).isEmpty)
    }

    @Test func aReloadWithARefusedPathKeepsTheRunningSettings() throws {
        let h = Home()
        h.tree.write("cache/a", size: 10_000)
        let text = "control_socket = \(h.tree.url("cw.sock"))\ndir.cache.path = \(h.tree.url("cache"))\n"
        let config = try h.config("r.conf", text)
        let daemon = try RunningCLI(["run", "-c", config], environment: h.environment)
        #expect(
            eventually { daemon.lines.contains { $0.contains("\"event\":\"ready\"") } && h.tree.exists("cw.sock") },
            "\(daemon.stderr)")
        let before = DiskSnapshot(h.home)
        _ = try h.config("r.conf", text + "dir.h.path = ~\ndir.h.quota = 1KB\n")
        let reload = try h.cli(["reload", "-c", config])
        #expect(
            reload.status == 2 && reload.err.contains("r.conf:3: dir.h.path: \(h.home) is the home directory"),
            "\(reload)")
        // The daemon's own re-read (SIGHUP) says the same in an `error` line and keeps its settings.
        daemon.signal(SIGHUP)
        #expect(
            eventually {
                daemon.lines.contains { $0.contains("\"kind\":\"reload\"") && $0.contains("r.conf:3: dir.h.path") }
            }, "\(daemon.stdout)")
        let status = try h.cli(["status", "--control-socket", h.tree.url("cw.sock"), "--json"])
        #expect(
            status.out.split(separator: "\n").count == 1 && status.out.contains("\"dir\":\"cache\""), "\(status.out)")
        #expect(DiskSnapshot(h.home).changes(since: before).isEmpty)
        #expect(daemon.interrupt() == 0)
        #expect(!daemon.stdout.contains("\"event\":\"evict\""))
    }

    @Test func theLibraryRefusesAtStartRegisterAndReload() throws {
        let h = Home()
        h.tree.mkdir("cache")
        // System paths in dry-run mode: were the guard to fail, nothing would be deleted.
        let refused = [
            (DirectorySettings(name: "etc", path: "/etc/ssl", quota: 1), "under /etc"),
            (DirectorySettings(name: "up", path: "/tmp/../etc"), "/etc is a top-level system directory"),
            (DirectorySettings(name: "link", path: h.tree.url("etc-link") + "/ssl"), "(which leads to /etc/ssl)"),
        ]
        for (dir, complaint) in refused {
            #expect(throws: WardenError.self) {
                try Watcher(settings: WardenSettings(directories: [dir]), mode: .dryRun).start()
            }
            do { try Watcher(settings: WardenSettings(directories: [dir]), mode: .dryRun).start() } catch {
                #expect(
                    error.description.hasPrefix("dir.\(dir.name).path: ") && error.description.contains(complaint),
                    "\(error)")
            }
        }
        var own = WardenSettings(directories: [DirectorySettings(name: "c", path: h.tree.url("cache"))])
        own.metricsFile = h.tree.url("cache/cw.prom")
        #expect(
            throws: WardenError.invalidSettings(
                ConfigError(
                    message:
                        "dir.c.path: \(h.tree.url("cache")) holds CacheWarden's own metrics file (\(h.tree.url("cache/cw.prom"))); register a cache folder instead"
                ))
        ) {
            try Watcher(settings: own).start()
        }
        var allowed = DirectorySettings(name: "etc", path: "/etc")
        allowed.allowAnyPath = true
        let report = try Watcher.report(WardenSettings(directories: [allowed]))
        #expect(report.first?.totals.files ?? 0 > 0)

        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "c", path: h.tree.url("cache"))]))
        try watcher.start()
        defer { watcher.stop() }
        do {
            try watcher.register(DirectorySettings(name: "u", path: "/usr/share"));
            Issue.record("registered /usr/share")
        } catch {
            #expect(error.description.contains("/usr/share is under /usr"), "\(error)")
        }
        let bad = WardenSettings(directories: [
            DirectorySettings(name: "c", path: h.tree.url("cache")), DirectorySettings(name: "b", path: "/usr/lib"),
        ])
        do { try watcher.reload(bad); Issue.record("reloaded with /usr/lib") } catch {
            #expect(error.description.contains("/usr/lib is under /usr"), "\(error)")
        }
        #expect(watcher.status().map(\.totals.dir) == ["c"])
    }

    @Test func theConfigReaderRefusesWhatIsNotASmallTextFile() throws {
        let h = Home()
        h.tree.mkdir("cache")
        let cache = h.tree.url("cache")
        let nul = try h.config("nul.conf", "dir.c.path = \(cache)\u{0}junk\n")
        let esc = try h.config("esc.conf", "# fine\ndir.c.quota\u{1b}[2J = 1GB\ndir.c.path = \(cache)\n")
        #expect(mkfifo(h.conf.url("fifo.conf"), 0o600) == 0)
        try String(repeating: "# padding line\n", count: 150_000).write(
            toFile: h.conf.url("big.conf"), atomically: true, encoding: .utf8)
        let expected: [(String, String)] = [
            (nul, "\(nul):1: control character U+0000"), (esc, "\(esc):2: control character U+001B"),
            ("/dev/zero", "/dev/zero: cannot read the config file: it is a character device, not a regular file"),
            (h.conf.url("fifo.conf"), "fifo.conf: cannot read the config file: it is a FIFO, not a regular file"),
            (h.conf.url("big.conf"), "big.conf: cannot read the config file: it is larger than 1 MiB"),
            (h.conf.path, "\(h.conf.path): cannot read the config file: it is a directory, not a regular file"),
        ]
        for (file, complaint) in expected {
            for command in ["check", "run"] {
                let r = try h.cli([command, "-c", file])
                #expect(
                    r.status == 2 && r.err.split(separator: "\n").count == 1 && r.err.contains(complaint),
                    "\(command) \(file): \(r)")
            }
        }
    }
}
