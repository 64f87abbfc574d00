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
        // A name that is not UTF-8.
        let raw = tree.path + "/bad\u{FF}"
        _ = raw   // (Swift strings are UTF-8; build the bytes by hand)
        var bytes = Array(tree.path.utf8) + [UInt8(ascii: "/"), 0x62, 0xff, 0xfe, 0]
        let fd = bytes.withUnsafeMutableBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
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
        #expect(r.err == "cachewarden: \(config):3: duplicate key dir.c.quota (first set on line 2); keep one of them\n")
        for i in 0..<10 { #expect(tree.exists("f\(i)")) }
    }

    @Test func badFlagsAndPathsAreOneLineAndExitStatus2() throws {
        let missing = "/tmp/definitely-not-here-\(getpid())"
        for args in [["run", "--dir", missing], ["run", "--dir", "/tmp", "--quota", "12XB"], ["run", "--bogus"],
                     ["run"], ["check", "--config", missing]] {
            let r = try runProcess(cachewardenBinary(), args)
            #expect(r.status == 2, "\(args)")
            #expect(r.err.split(separator: "\n").count == 1, "\(args): \(r.err)")
            #expect(r.err.hasPrefix("cachewarden: "), "\(args)")
            #expect(r.out.isEmpty)
        }
    }

    @Test func checkPrintsTheParsedSettings() throws {
        let tree = TemporaryTree()
        let config = tree.url("ok.conf")
        try "size_basis = apparent\ndir.x.path = .\ndir.x.quota = 2KiB  # two kibibytes\n".write(toFile: config, atomically: true, encoding: .utf8)
        let r = try runProcess(cachewardenBinary(), ["check", "--config", config])
        #expect(r.status == 0)
        #expect(r.out.contains("dir.x.quota = 2048B"))
        #expect(r.out.contains("dir.x.path = \(tree.path)"))
        #expect(r.out.contains("size_basis = apparent"))
    }
}
