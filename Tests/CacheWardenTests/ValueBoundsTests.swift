import CacheWardenCommandLine
import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Every duration and size has bounds: one past them is an error naming the file and line, in `check`, `run` and a
/// reload alike; the largest accepted values run (they used to pass `check` and crash `run` past ~292 years).
@Suite struct ValueBoundsTests {
    /// Each bounded key at its bound plus one (and what it needs beside it), with the value's line in the file.
    static let pastTheBound: [(key: String, value: String, extra: String)] = [
        ("dir.c.max_age", "36501d", ""), ("dir.c.max_age", "1217mo", ""), ("dir.c.max_age", "106752d", ""),
        ("dir.c.min_age", "36501d", ""), ("dir.c.trim_after_idle", "604801s", "dir.c.quota = 1GB"),
        ("dir.c.poll_interval", "8d", ""), ("expire_interval", "2w", ""), ("poll_interval", "604801s", ""),
        ("metrics_interval", "10081m", ""), ("low_disk_interval", "169h", "low_disk_free = 5%"),
        ("dir.c.quota", "9223372036854775808B", ""), ("dir.c.quota", "8388608TiB", ""), ("dir.c.quota", "0.4B", ""),
        ("dir.c.trim_to", "1.5B", "dir.c.quota = 1GB"),
        ("dir.c.hard_quota", "9223372036854775808", "dir.c.quota = 1GB"),
        ("group.g.quota", "8388608TiB", "dir.c.group = g"), ("low_disk_free", "0.1KiB", ""),
    ]

    @Test func checkRefusesEachBoundedKeyOnePastItsBoundNamingTheFileAndLine() throws {
        let tree = TemporaryTree()
        tree.mkdir("c")
        let config = tree.url("cw.conf")
        for (key, value, extra) in Self.pastTheBound {
            try "dir.c.path = c\n\(extra)\n\(key) = \(value)\n".write(toFile: config, atomically: true, encoding: .utf8)
            let r = try runProcess(cachewardenBinary(), ["check", "--config", config])
            #expect(r.status == 2 && r.out.isEmpty, "\(key) = \(value): \(r.status) \(r.out)")
            #expect(
                r.err.hasPrefix("cachewarden: \(config):3: bad value `\(value)` for \(key): ")
                    && r.err.filter { $0 == "\n" }.count == 1,
                "\(key) = \(value): \(r.err)")
        }
    }

    @Test func errorsSayTheBound() {
        let tree = TemporaryTree()
        tree.mkdir("c")
        func error(_ line: String) -> String {
            do {
                _ = try WardenSettings.parse("dir.c.path = c\n\(line)\n", source: "t.conf", relativeTo: tree.path)
            } catch { return error.description }
            return "no error"
        }
        #expect(
            error("dir.c.max_age = 36501d")
                == "t.conf:2: bad value `36501d` for dir.c.max_age: expected manual, 3d, 1w, 2w, 1mo or <N> with unit s, m, h, d, w, mo, at most 36500d (100 years)"
        )
        #expect(
            error("poll_interval = 8d") == "t.conf:2: bad value `8d` for poll_interval: expected 30s, 5m, at most 1w")
        #expect(
            error("dir.c.quota = 0.4B")
                == "t.conf:2: bad value `0.4B` for dir.c.quota: `0.4B` is not a whole number of bytes; a size is a whole number of bytes below 8 EiB"
        )
        #expect(
            error("dir.c.quota = 8388608TiB")
                == "t.conf:2: bad value `8388608TiB` for dir.c.quota: `8388608TiB` is 8 EiB or more; a size is a whole number of bytes below 8 EiB"
        )
        #expect(
            error("dir.c.trim_to = 1.5B")
                == "t.conf:2: bad value `1.5B` for dir.c.trim_to: `1.5B` is not a whole number of bytes; a size is a whole number of bytes below 8 EiB"
        )
        #expect(
            error("dir.c.trim_to = lots")
                == "t.conf:2: bad value `lots` for dir.c.trim_to: expected a share of the quota like 50% or a size like 400MB"
        )
    }

    @Test func theManualPageAndTheDocsStateTheBounds() throws {
        let man = ConfigKeyDocs.man(version: "test")
        let docs = try String(
            contentsOf: ConfigKeyTableTests.repoRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        for text in [man, docs] {
            #expect(
                text.contains("36500d") && text.contains("100 years") && text.contains("8 EiB") && text.contains("1w"))
        }
    }

    @Test func sizesAreWholeBytesComputedExactly() {
        #expect(ValueParsers.size("1.1KB") == 1100) // 1.1 × 1e3 is 1100.0000000000002 in floating point
        #expect(ValueParsers.size("0.5KiB") == 512)
        #expect(ValueParsers.size("0.0009765625KiB") == 1)
        #expect(ValueParsers.size("1.5GiB") == 1_610_612_736)
        #expect(ValueParsers.size(".5KB") == 500 && ValueParsers.size("2.KB") == 2000)
        #expect(ValueParsers.size("0.0GB") == 0 && ValueParsers.size("0B") == 0)
        #expect(ValueParsers.size("9223372036854775807") == .max && ValueParsers.size("9223372036854775807B") == .max)
        #expect(
            ValueParsers.size("8388607TiB") == 8_388_607 << 40
                && ValueParsers.size("8388607.5TiB") == 8_388_607 << 40 + 1 << 39)
        #expect(ValueParsers.readSize("0.4B") == .fractional && ValueParsers.readSize("1.1KiB") == .fractional)
        #expect(ValueParsers.readSize("0.0001KB") == .fractional)
        #expect(
            ValueParsers.readSize("9223372036854775808") == .tooLarge
                && ValueParsers.readSize("99999999999999999999999KB") == .tooLarge)
        #expect(ValueParsers.readSize("1.5") == .malformed && ValueParsers.readSize("1.2.3KB") == .malformed)
        #expect(ValueParsers.readSize(".KB") == .malformed && ValueParsers.readSize("١KB") == .malformed)
    }

    @Test func durationsStopAtTheirKindsBound() {
        #expect(
            ValueParsers.duration("36500d", .age) == 3_153_600_000
                && ValueParsers.duration("1216mo", .age) == 3_151_872_000)
        #expect(ValueParsers.duration("36501d", .age) == nil && ValueParsers.duration("1217mo", .age) == nil)
        #expect(
            ValueParsers.duration("1w", .interval) == 604_800 && ValueParsers.duration("604800s", .interval) == 604_800)
        #expect(ValueParsers.duration("604801s", .interval) == nil && ValueParsers.duration("1mo", .interval) == nil)
        #expect(ValueParsers.duration("99999999999999999999d", .age) == nil)
    }

    @Test func settingsBuiltInCodeGetTheSameBounds() throws {
        let tree = TemporaryTree()
        func refused(_ change: (inout WardenSettings) -> Void) -> String {
            var s = WardenSettings(directories: [DirectorySettings(name: "c", path: tree.path)])
            change(&s)
            do { try s.validate() } catch { return error.description }
            return "accepted"
        }
        #expect(
            refused { $0.directories[0].maxAge = 106_752 * 86_400 }
                == "dir.c.max_age is 9223372800 s; expected 1 s to 36500d (100 years)")
        #expect(refused { $0.directories[0].maxAge = 0 } == "dir.c.max_age is 0 s; expected 1 s to 36500d (100 years)")
        #expect(refused { $0.directories[0].minAge = .max }.hasPrefix("dir.c.min_age is "))
        #expect(refused { $0.directories[0].trimAfterIdle = 604_801 }.hasPrefix("dir.c.trim_after_idle is 604801 s"))
        #expect(refused { $0.directories[0].pollInterval = -1 }.hasPrefix("dir.c.poll_interval is -1 s"))
        #expect(refused { $0.expireInterval = .max }.hasPrefix("expire_interval is "))
        #expect(refused { $0.lowDiskInterval = 604_801 }.hasPrefix("low_disk_interval is "))
        #expect(refused { $0.metricsInterval = 0 }.hasPrefix("metrics_interval is "))
        #expect(refused { $0.pollInterval = 604_801 }.hasPrefix("poll_interval is "))
        #expect(
            refused { $0.directories[0].weight = 0 } == "dir.c.weight is 0; expected a whole number from 1 to 1000000")
        #expect(refused { $0.directories[0].quota = -1 } == "dir.c.quota is negative; expected a size ≥ 0")
        #expect(
            refused {
                $0.directories[0].maxAge = 36_500 * 86_400; $0.pollInterval = 604_800
            } == "accepted")
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "c", path: tree.path, maxAge: .max)]))
        #expect(throws: WardenError.self) { try watcher.start() }
    }

    @Test func runRefusesAnOutOfBoundMaxAgeFlagWithOneLine() throws {
        let tree = TemporaryTree()
        let r = try runProcess(cachewardenBinary(), ["run", "--dir", tree.path, "--max-age", "99999999d"])
        #expect(r.status == 2 && r.out.isEmpty, "\(r)")
        #expect(
            r.err.hasPrefix("cachewarden: bad value `99999999d` for --max-age: ")
                && r.err.hasSuffix("at most 36500d (100 years)\n"), "\(r.err)")
    }

    @Test func theLargestAcceptedValuesRunAndStopCleanly() throws {
        let tree = TemporaryTree()
        for i in 0..<3 { tree.write("c/f\(i)", size: 1000, mtime: 1_000_000 + Double(i)) }
        tree.mkdir("metrics")
        let config = tree.url("cw.conf")
        try """
        backend = poll
        poll_interval = 1w
        expire_interval = 604800s
        metrics_file = metrics/cw.prom
        metrics_interval = 1w
        low_disk_free = 1B
        low_disk_interval = 1w
        dir.c.path = c
        dir.c.quota = 9223372036854775807B
        dir.c.hard_quota = 10000%
        dir.c.trim_after_idle = 1w
        dir.c.max_age = 36500d
        dir.c.min_age = 1216mo
        dir.c.poll_interval = 1w
        dir.c.group = g
        dir.c.weight = 1000000
        group.g.quota = 9223372036854775807
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let check = try runProcess(cachewardenBinary(), ["check", "--config", config])
        #expect(check.status == 0, "\(check.err)")
        let cli = try RunningCLI(["run", "--config", config])
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(cli.stderr)")
        cli.signal(SIGUSR1) // a status pass over the settings while running
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"status\"") } }, "\(cli.stderr)")
        #expect(cli.interrupt() == 0, "\(cli.stderr)")
        #expect(cli.lines.last?.contains("\"event\":\"stop\"") == true, "\(cli.stdout)")
        for i in 0..<3 { #expect(tree.exists("c/f\(i)"), "nothing is 100 years old") }
    }

    @Test func aReloadPastABoundIsRefusedAndTheDaemonSurvives() throws {
        let tree = TemporaryTree()
        let daemon = try DaemonCLITests.RunningDaemon(tree)
        let good = try String(contentsOfFile: daemon.config, encoding: .utf8)
        // 106752d used to pass and overflow the age cutoff, killing the daemon and leaving its socket behind.
        try (good + "dir.cache.max_age = 106752d\n").write(toFile: daemon.config, atomically: true, encoding: .utf8)
        daemon.cli.signal(SIGHUP)
        #expect(
            eventually { daemon.cli.lines.contains { $0.contains("\"kind\":\"reload\"") && $0.contains("106752d") } },
            "\(daemon.cli.stderr)")
        let reload = try daemon.run(["reload", "--control-socket", daemon.socket])
        #expect(
            reload.status == 2 && reload.err.contains("\(daemon.config):4: bad value `106752d` for dir.cache.max_age"),
            "\(reload)")
        try (good + "dir.cache.poll_interval = 604801s\n").write(
            toFile: daemon.config, atomically: true, encoding: .utf8)
        let again = try daemon.run(["reload", "--control-socket", daemon.socket])
        #expect(again.status == 2 && again.err.contains("\(daemon.config):4: bad value `604801s`"), "\(again)")
        let status = try daemon.run(["status", "--control-socket", daemon.socket, "--json"])
        #expect(
            status.status == 0 && status.out.contains("\"dir\":\"cache\""),
            "the daemon died: \(status) \(daemon.cli.stderr)")
        #expect(daemon.cli.interrupt() == 0)
        #expect(!tree.exists("cw.sock"))
    }
}
