import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// `dir.<name>.client_lock` and `client_lock_wait`: the value's syntax, the profiles' locks, and every bad input
/// as one `check` line naming the file and line (exit 2), before anything is read or deleted.
@Suite struct ClientLockConfigTests {
    let tree = TemporaryTree()

    func parse(_ text: String) throws(ConfigError) -> WardenSettings {
        try WardenSettings.parse(text, source: "test.conf", relativeTo: tree.path)
    }

    /// `cachewarden check` of `text` (written as `c.conf` in the tree).
    func check(_ text: String) throws -> (status: Int32, out: String, err: String) {
        try text.write(toFile: tree.url("c.conf"), atomically: true, encoding: .utf8)
        return try runProcess(cachewardenBinary(), ["check", "-c", tree.url("c.conf")])
    }

    @Test func theValueNamesFilesKindsAndUnits() throws {
        tree.mkdir("c")
        let cases: [(String, [ClientLock])] = [
            (".lock", [ClientLock(".lock")]),
            (
                "../.package-cache-mutate, ../.package-cache",
                [ClientLock("../.package-cache-mutate"), ClientLock("../.package-cache")]
            ),
            ("build-cache-1/build-cache-1.lock ofd", [ClientLock("build-cache-1/build-cache-1.lock", kind: .ofd)]),
            (".locks/{unit}/*.lock flock", [ClientLock(".locks/{unit}/*.lock")]),
            ("none", []),
        ]
        for (value, locks) in cases {
            let s = try parse("dir.c.path = c\ndir.c.evict_unit = entry\ndir.c.client_lock = \(value)\n")
            #expect(s.directories[0].clientLock == ClientLocks(locks), "\(value)")
            #expect(
                try ClientLocks.parse(ClientLocks(locks).configText).get() == ClientLocks(locks),
                "round trip of \(value)")
        }
        let wait = try parse("dir.c.path = c\nclient_lock_wait = 30m\n")
        let byDefault = try parse("dir.c.path = c\n")
        #expect(wait.clientLockWait == 1800 && byDefault.clientLockWait == 3600)
    }

    @Test func profilesTakeTheirClientsLocksAndAKeyOverridesThem() throws {
        tree.mkdir("c")
        let locks: [(CacheProfile, String?)] = [
            (.uv, ".lock"), (.cargo, "../.package-cache-mutate, ../.package-cache"),
            (.huggingface, ".locks/{unit}/*.lock"), (.ccache, nil), (.sccache, nil),
            (.go, nil), (.pip, nil), (.npm, nil), (.nginx, nil), (.bazel, nil), (.generic, nil),
        ]
        for (profile, expected) in locks {
            let s = try parse("dir.c.path = c\ndir.c.profile = \(profile.rawValue)\n").resolved()
            #expect(s.directories[0].clientLock?.configText == expected, "\(profile)")
        }
        let none = try parse("dir.c.path = c\ndir.c.profile = uv\ndir.c.client_lock = none\n").resolved()
        #expect(none.directories[0].clientLock?.isEmpty == true)
        let r = try check("dir.c.path = c\ndir.c.profile = uv\n")
        #expect(
            r.status == 0 && r.out.contains("dir.c.client_lock = .lock  # from profile uv\n")
                && r.out.contains("client_lock_wait = 3600s\n"), "\(r)")
    }

    @Test func aBadValueIsOneLineNamingFileAndLine() throws {
        tree.mkdir("c")
        let bad: [(String, String)] = [
            ("/var/lock/x", "is absolute"), ("../../.lock", "is outside the root"),
            ("a/../../b", "is outside the root"),
            ("../x/y", "is outside the root"), ("../*.lock", "is outside the root"), ("a//b", "empty or `.` component"),
            ("./.lock", "empty or `.` component"), (".lock exclusive", "unknown lock kind `exclusive`"),
            (".lock flock extra", "comma-separated lock files"), (".lock,", "comma-separated lock files"),
            ("{unit}/{unit}", "{unit} twice"), ("x{unit}.lock", "must be a whole component"),
            (".lock, .lock", "named twice"),
            ("{unit}/.lock", "inside its own unit, which could then never be deleted whole"),
        ]
        for (value, complaint) in bad {
            let r = try check("# locks\ndir.c.path = c\ndir.c.evict_unit = entry\ndir.c.client_lock = \(value)\n")
            #expect(r.status == 2 && r.out.isEmpty, "\(value): \(r)")
            #expect(
                r.err.hasPrefix("cachewarden: \(tree.url("c.conf")):4: bad value `\(value)` for dir.c.client_lock: ")
                    && r.err.contains(complaint) && r.err.split(separator: "\n").count == 1, "\(value): \(r.err)")
        }
        let unit = try check("dir.c.path = c\ndir.c.client_lock = .locks/{unit}/*.lock\n")
        #expect(unit.status == 2 && unit.err.contains("c.conf:2: dir.c.client_lock takes locks per unit"), "\(unit)")
        let wait = try check("dir.c.path = c\nclient_lock_wait = 2w\n")
        #expect(wait.status == 2 && wait.err.contains("c.conf:2: bad value `2w` for client_lock_wait"), "\(wait)")
    }

    /// `locks/\*.lock` matched a file named `*.lock` under fnmatch, while its protect glob (`/locks/\*.lock`)
    /// did not keep that file out of trims: a backslash is refused at its line, before anything is read.
    @Test func aBackslashInALockPathIsAnErrorAtItsLine() throws {
        tree.mkdir("c")
        for value in ["locks/\\*.lock", ".locks/{unit}/a\\?.lock", "\\.lock"] {
            #expect(throws: ConfigError.self, "\(value)") {
                try parse("dir.c.path = c\ndir.c.evict_unit = entry\ndir.c.client_lock = \(value)\n")
            }
            let r = try check("dir.c.path = c\ndir.c.evict_unit = entry\ndir.c.client_lock = \(value)\n")
            #expect(r.status == 2 && r.out.isEmpty && r.err.split(separator: "\n").count == 1, "\(value): \(r)")
            #expect(
                r.err.hasPrefix("cachewarden: \(tree.url("c.conf")):3: bad value `\(value)` for dir.c.client_lock: ")
                    && r.err.contains("has a backslash"), "\(value): \(r.err)")
        }
    }

    /// Only `check` and `run` look at the lock files: a command that reads the config for its socket or its
    /// directories (`status`, `trim`, `clear` asking a daemon) opens none, whatever is there.
    @Test func readingTheConfigOpensNoLockFile() throws {
        tree.mkdir("c/dir.lock")
        #expect(mkfifo(tree.url("c/fifo.lock"), 0o644) == 0)
        let text = "dir.c.path = c\ndir.c.client_lock = dir.lock, fifo.lock\n"
        try text.write(toFile: tree.url("c.conf"), atomically: true, encoding: .utf8)
        #expect(try WardenSettings.load(configFile: tree.url("c.conf")).directories[0].clientLock?.locks.count == 2)
        #expect(try parse(text).directories.count == 1)
        #expect(throws: ConfigError.self) {
            try WardenSettings.load(configFile: tree.url("c.conf"), checkingLockFiles: true)
        }
        let status = try runProcess(
            "/usr/bin/timeout", ["20", cachewardenBinary(), "status", "-c", tree.url("c.conf")])
        #expect(!status.err.contains("client_lock"), "\(status)")
    }

    @Test func aLockThatIsNoLockFileIsACheckErrorAtItsLine() throws {
        for i in 0..<4 { tree.write("c/f\(i)", size: 1000) }
        tree.mkdir("c/dir.lock")
        #expect(mkfifo(tree.url("c/fifo.lock"), 0o644) == 0)
        #expect(symlink("f0", tree.url("c/link.lock")) == 0)
        tree.write("c/file", size: 10)
        let bad: [(String, String)] = [
            ("dir.lock", "dir.lock: it is a directory, not a regular file"),
            ("fifo.lock", "fifo.lock: it is a FIFO, not a regular file"),
            ("link.lock", "link.lock: it is a symlink; a lock file is never followed through one"),
            ("file/x.lock", "file/x.lock: file is not a folder (or a symlink)"),
        ]
        let before = DiskSnapshot(tree.url("c"))
        for (lock, complaint) in bad {
            for command in ["check", "run"] {
                try "dir.c.path = c\ndir.c.quota = 1KB\ndir.c.client_lock = .lock, \(lock)\n".write(
                    toFile: tree.url("c.conf"), atomically: true, encoding: .utf8)
                let r = try runProcess(
                    "/usr/bin/timeout", ["20", cachewardenBinary(), command, "-c", tree.url("c.conf")])
                #expect(r.status == 2 && r.out.isEmpty, "\(command) \(lock): \(r)")
                #expect(
                    r.err
                        == "cachewarden: \(tree.url("c.conf")):3: dir.c.client_lock: \(complaint); expected the lock file the client takes (a regular file), or nothing there\n",
                    "\(command) \(lock): \(r.err)")
            }
        }
        #expect(DiskSnapshot(tree.url("c")).changes(since: before).isEmpty, "a refused config deleted or changed files")
        // A profile's lock is checked too, at the line of `profile`; a missing lock file is no error.
        tree.mkdir("u/.lock")
        tree.mkdir("v")
        let profile = try check("dir.u.path = u\ndir.u.profile = uv\ndir.v.path = v\ndir.v.profile = uv\n")
        #expect(
            profile.status == 2 && profile.err.contains("c.conf:2: dir.u.client_lock: .lock: it is a directory")
                && profile.err.contains("(the lock of profile uv; `dir.u.client_lock = none` takes none)"), "\(profile)"
        )
        // Beside the root (cargo's locks): a directory there is refused too.
        tree.mkdir("home/registry")
        tree.mkdir("home/.package-cache")
        let beside = try check("dir.r.path = home/registry\ndir.r.profile = cargo\n")
        #expect(
            beside.status == 2
                && beside.err.contains("c.conf:2: dir.r.client_lock: ../.package-cache: it is a directory"), "\(beside)"
        )
    }

    @Test(.enabled(if: AsNobody.unavailable == nil, "needs root, setpriv and a binary user nobody can run"))
    func aLockFileTheDaemonCannotOpenIsACheckError() throws {
        let user = try AsNobody()
        let home = user.home
        try FileManager.default.createDirectory(atPath: home + "/.cache/app/sub", withIntermediateDirectories: true)
        try "dir.a.path = ~/.cache/app\ndir.a.client_lock = sub/.lock\n".write(
            toFile: home + "/a.conf", atomically: true, encoding: .utf8)
        try Data().write(to: URL(fileURLWithPath: home + "/.cache/app/sub/.lock"))
        try user.handOver()
        // Root's lock file, mode 0600: nobody cannot open it.
        #expect(chown(home + "/.cache/app/sub/.lock", 0, 0) == 0 && chmod(home + "/.cache/app/sub/.lock", 0o600) == 0)
        let r = try user.run(["check", "-c", home + "/a.conf"])
        #expect(
            r.status == 2
                && r.err.contains("a.conf:2: dir.a.client_lock: sub/.lock: it cannot be opened (Permission denied)"),
            "\(r)")
        // A folder on the way it may not enter: the same.
        #expect(
            chmod(home + "/.cache/app/sub/.lock", 0o644) == 0 && chown(home + "/.cache/app/sub", 0, 0) == 0
                && chmod(home + "/.cache/app/sub", 0o700) == 0)
        let folder = try user.run(["check", "-c", home + "/a.conf"])
        #expect(
            folder.status == 2
                && folder.err.contains(
                    "a.conf:2: dir.a.client_lock: sub/.lock: it cannot be opened (Permission denied)"),
            "\(folder)")
    }
}
