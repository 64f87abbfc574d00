import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// `cachewarden` as a user runs it: real process, real stdout, lines checked by python3 and jq.
@Suite struct CLITests {
    @Test func runPrintsParsableLinesForHostileFileNamesAndStopsOnSIGINT() throws {
        let tree = TemporaryTree()
        let cli = try RunningCLI(["run", "--dir", tree.path, "--quota", "1MB"])
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } })
        for name in ["with space", "quote\"d", "new\nline", "ctl\u{1}x"] { tree.write(name, size: 100) }
        // A name that is not UTF-8 (Swift strings are always UTF-8: build the bytes by hand).
        var bytes = Array(tree.path.utf8) + [UInt8(ascii: "/"), 0x62, 0xff, 0xfe, 0]
        let fd = bytes.withUnsafeMutableBufferPointer {
            open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644)
        }
        #expect(fd >= 0)
        close(fd)
        #expect(eventually { cli.lines.filter { $0.contains("\"event\":\"write\"") }.count >= 5 })
        cli.signal(SIGUSR1)
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"status\"") } })
        #expect(cli.interrupt() == 0)
        let names = try parseWithPython(cli.stdout)
        #expect(names.first == "ready")
        #expect(names.last == "stop")
        #expect(names.filter { $0 == "write" }.count == 5)
        #expect(cli.stdout.contains("b\u{FFFD}\u{FFFD}"))
        if let jq = which("jq") {
            #expect(try runProcess(jq, ["-c", "."], stdin: cli.stdout).status == 0)
        }
    }

    @Test func runTrimsAndReportsItAsJSON() throws {
        let tree = TemporaryTree()
        let cli = try RunningCLI(["run", "--dir", tree.path, "--quota", "100KB", "--size-basis", "apparent"])
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } })
        for i in 0..<12 { tree.write("f\(i)", size: 10_000) }
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"trim\"") } })
        #expect(cli.interrupt() == 0)
        let trimLine = try #require(cli.lines.first { $0.contains("\"event\":\"trim\"") })
        let trim = try JSONSerialization.jsonObject(with: Data(trimLine.utf8)) as! [String: Any]
        let before = trim["total_before"] as! Int, freed = trim["freed"] as! Int, total = trim["total"] as! Int
        #expect(before - freed == total)
        #expect(total <= 50_000)
        #expect(cli.stderr.isEmpty)
    }

    @Test func aBadConfigIsOneLineWithFileAndLineAndExitStatus2AndDeletesNothing() throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("f\(i)", size: 10_000) }
        let config = tree.url("bad.conf")
        try """
        dir.c.path = \(tree.path)
        dir.c.quota = 1KB
        dir.c.quota = 2KB
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let r = try runProcess(cachewardenBinary(), ["run", "--config", config])
        #expect(r.status == 2)
        #expect(r.out.isEmpty)
        #expect(
            r.err == "cachewarden: \(config):3: duplicate key dir.c.quota (first set on line 2); keep one of them\n")
        for i in 0..<10 { #expect(tree.exists("f\(i)")) }
    }

    @Test func badFlagsAndPathsAreOneLineAndExitStatus2() throws {
        let missing = "/tmp/definitely-not-here-\(getpid())"
        for args in [
            ["run", "--dir", missing], ["run", "--dir", "/tmp", "--quota", "12XB"], ["run", "--bogus"],
            ["run"], ["check", "--config", missing],
        ] {
            let r = try runProcess(cachewardenBinary(), args)
            #expect(r.status == 2, "\(args)")
            #expect(r.err.split(separator: "\n").count == 1, "\(args): \(r.err)")
            #expect(r.err.hasPrefix("cachewarden: "), "\(args)")
            #expect(r.out.isEmpty)
        }
    }

    @Test func aRepeatedOptionAStrayWordAndAnEmptyDirAreOneLineNamingThem() throws {
        let tree = TemporaryTree()
        tree.write("c/f", size: 100)
        let cases: [([String], String)] = [
            (
                ["run", "--dir", tree.url("c"), "--quota", "1MB", "--quota", "2MB"],
                "--quota is given twice (`1MB`, then `2MB`); give it once (see `cachewarden run --help`)"
            ),
            (
                ["check", "-c", "a.conf", "--config=b.conf"],
                "--config is given twice (`a.conf`, then `b.conf`); give it once (see `cachewarden check --help`)"
            ),
            (["run", "--dir", tree.url("c"), "stray"], "unexpected argument `stray` (see `cachewarden run --help`)"),
            (["--version", "stray"], "unexpected argument `stray` (see `cachewarden --help`)"),
            (["help", "run", "stray"], "unexpected argument `stray` (see `cachewarden --help`)"),
            (
                ["--generate-completion-script", "bash", "stray"],
                "unexpected argument `stray` (see `cachewarden --help`)"
            ),
            (["check", "--dir", ""], "--dir has an empty value; expected --dir <path>"),
            (["run", "--dir", "", "--quota", "1MB"], "--dir has an empty value; expected --dir <path>"),
            (["check", "--dir", tree.url("c"), "--quota="], "--quota has an empty value; expected --quota <size>"),
            (
                ["check", "--dir", tree.url("none")],
                "--dir: \(tree.url("none")) does not exist; expected an existing directory"
            ),
        ]
        for (args, message) in cases {
            let r = try runProcess(cachewardenBinary(), args)
            #expect(r.status == 2 && r.out.isEmpty, "\(args): \(r)")
            #expect(r.err == "cachewarden: \(message)\n", "\(args): \(r.err)")
        }
        #expect(tree.exists("c/f"))
    }

    @Test func checkPrintsTheParsedSettings() throws {
        let tree = TemporaryTree()
        let config = tree.url("ok.conf")
        tree.mkdir("x") // the root must not hold the config file (RootGuard)
        try "size_basis = apparent\ndir.x.path = x\ndir.x.quota = 2KiB  # two kibibytes\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let r = try runProcess(cachewardenBinary(), ["check", "--config", config])
        #expect(r.status == 0)
        #expect(r.out.contains("dir.x.quota = 2048B"))
        #expect(r.out.contains("dir.x.path = \(tree.path)/x"))
        #expect(r.out.contains("size_basis = apparent"))
    }

    @Test func checkAndRunBothRefuseAConfigWithNoDirectory() throws {
        let tree = TemporaryTree()
        let config = tree.url("empty.conf")
        for text in ["# dir.x.path = /srv/cache\n", "", "\n\n   \n", "# only\n# comments\n"] {
            try text.write(toFile: config, atomically: true, encoding: .utf8)
            let expected =
                "cachewarden: \(config):1: no directory registered; expected at least one `dir.<name>.path = /some/folder`\n"
            // `check` used to accept it with a note while `run` refused it: what `check` accepts, `run` runs.
            let r = try runProcess(cachewardenBinary(), ["check", "--config", config])
            #expect(r.status == 2 && r.out.isEmpty && r.err == expected, "\(text.debugDescription): \(r)")
            let run = try runProcess(cachewardenBinary(), ["run", "--config", config])
            #expect(run.status == 2 && run.out.isEmpty && run.err == expected, "\(text.debugDescription): \(run)")
        }
    }
}

/// `clear`, `status` and SIGHUP through the command line.
@Suite struct CLIPolicyTests {
    func config(_ tree: TemporaryTree, _ body: String) throws -> String {
        let file = tree.url("cw.conf")
        try body.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func clearPrintsItsPhasesInOrderAndFreesWhatDisappeared() throws {
        let tree = TemporaryTree()
        for i in 0..<30 { tree.write("cache/d\(i % 3)/f\(i)", size: 1000 + i) }
        tree.write("other/keep", size: 500)
        let before = diskTotals(tree.url("cache"), basis: .apparent).total
        let file = try config(tree, "size_basis = apparent\ndir.cache.path = cache\ndir.other.path = other\n")
        let r = try runProcess(cachewardenBinary(), ["clear", "--config", file, "cache"])
        #expect(r.status == 0, "\(r.err)")
        let lines = r.out.split(separator: "\n").map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.allSatisfy { $0 != nil })
        let phases = lines.compactMap { $0?["event"] as? String == "clear" ? $0?["phase"] as? String : nil }
        var order: [String] = []
        for p in phases where order.last != p { order.append(p) }
        #expect(order == ["pre_calculating", "cleaning", "post_calculating", "done"])
        let done = try #require(lines.last(where: { $0?["phase"] as? String == "done" }) ?? nil)
        #expect(done["freed"] as? Int == Int(before))
        #expect(done["removed"] as? Int == 30)
        #expect(diskTotals(tree.url("cache")).files == 0)
        #expect(tree.exists("other/keep"))
        #expect(tree.exists("cache/d1"))
    }

    @Test func clearDryRunDeletesNothing() throws {
        let tree = TemporaryTree()
        for i in 0..<5 { tree.write("c/f\(i)", size: 100) }
        let file = try config(tree, "dir.c.path = c\n")
        let r = try runProcess(cachewardenBinary(), ["clear", "--config", file, "--dry-run"])
        #expect(r.status == 0)
        #expect(r.out.contains("\"dry_run\":true"))
        for i in 0..<5 { #expect(tree.exists("c/f\(i)")) }
        let unknown = try runProcess(cachewardenBinary(), ["clear", "--config", file, "nope"])
        #expect(unknown.status == 2)
        #expect(unknown.err.hasPrefix("cachewarden: no directory named nope"))
    }

    @Test func aFlagWhereAValueIsDueIsRefusedAndAMissingDaemonClearsNothing() throws {
        let tree = TemporaryTree()
        for i in 0..<5 { tree.write("c/f\(i)", size: 100) }
        let file = try config(tree, "dir.c.path = c\n")
        // `--dry-run` is not taken as the socket's name (which would drop the flag and clear for real).
        let swallowed = try runProcess(
            cachewardenBinary(), ["clear", "--config", file, "--control-socket", "--dry-run"])
        #expect(swallowed.status == 2 && swallowed.err.contains("missing value for --control-socket"), "\(swallowed)")
        // A socket named on the command line with nobody there: an error, not a clear without the daemon.
        let nobody = try runProcess(
            cachewardenBinary(), ["clear", "--config", file, "--control-socket", tree.url("none.sock")])
        #expect(nobody.status == 1 && nobody.err.contains("nothing cleared"), "\(nobody)")
        for i in 0..<5 { #expect(tree.exists("c/f\(i)")) }
    }

    @Test func statusPrintsOneRowPerDirectoryAsTableOrJSON() throws {
        let tree = TemporaryTree()
        tree.write("a/x", size: 3000)
        tree.write("b/y", size: 1000)
        tree.write("a/keep.db", size: 1024)
        let file = try config(
            tree, "size_basis = apparent\ndir.a.path = a\ndir.a.quota = 10KiB\ndir.a.protect = *.db\ndir.b.path = b\n")
        let json = try runProcess(cachewardenBinary(), ["status", "--config", file, "--json"])
        #expect(json.status == 0)
        let rows = json.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(rows.count == 2)
        #expect(rows[0]["dir"] as? String == "a")
        #expect(rows[0]["total"] as? Int == 4024)
        #expect(rows[0]["protected"] as? Int == 1024)
        #expect(rows[0]["quota"] as? Int == 10240)
        #expect(rows[1]["files"] as? Int == 1)
        let table = try runProcess(cachewardenBinary(), ["status", "--config", file])
        let lines = table.out.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("NAME"))
        #expect(lines[1].contains("3.9KiB")) // the config used 1024-based units, so the report does too
        #expect(lines[1].contains("39%"))
        #expect(lines[1].contains("1.0KiB")) // protected bytes
        let si = try runProcess(cachewardenBinary(), ["status", "--config", file, "--si"])
        #expect(si.out.contains("4.0kB"))
    }

    @Test func sighupReloadsTheConfigAndABadFileKeepsTheOldOne() throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("c/f\(i)", size: 1000, mtime: Double(1_000_000 + i)) }
        let file = try config(tree, "size_basis = apparent\ndir.c.path = c\ndir.c.quota = 100KB\n")
        let cli = try RunningCLI(["run", "--config", file])
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } })
        try "size_basis = apparent\ndir.c.path = c\ndir.c.quota = 5KB\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        cli.signal(SIGHUP)
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"trim\"") } })
        #expect(eventually { diskTotals(tree.url("c"), basis: .apparent).total <= 2500 })
        try "dir.c.path = c\ndir.c.quota = lots\n".write(toFile: file, atomically: true, encoding: .utf8)
        cli.signal(SIGHUP)
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"error\"") && $0.contains("reload") } })
        tree.write("c/after", size: 100)
        #expect(eventually { cli.lines.contains { $0.contains("\"file\":\"after\"") } })
        #expect(cli.interrupt() == 0)
    }
}
