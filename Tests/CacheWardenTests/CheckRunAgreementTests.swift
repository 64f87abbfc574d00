import Foundation
import Glibc
import Testing

/// What `check` accepts, `run` runs: both read the settings through the same validation, and refuse the same
/// inputs with the same one line naming the file and line, exit status 2, before anything is watched or deleted.
@Suite struct CheckRunAgreementTests {
    /// `check` and `run` on `body` (a config in `tree`): both must fail with exactly `expected` (one line).
    func bothRefuse(
        _ tree: TemporaryTree, _ body: String, environment: [String: String?] = [:],
        _ expected: (String) -> String
    ) throws {
        let config = tree.url("cw.conf")
        try body.write(toFile: config, atomically: true, encoding: .utf8)
        for command in ["check", "run"] {
            let r = try runProcess(cachewardenBinary(), [command, "--config", config], environment: environment)
            #expect(r.status == 2 && r.out.isEmpty, "\(command): \(r)")
            #expect(r.err == "cachewarden: \(expected(config))\n", "\(command): \(r.err)")
        }
        for i in 0..<3 { #expect(tree.exists("c/f\(i)"), "something was deleted") }
    }

    func tree() -> TemporaryTree {
        let tree = TemporaryTree()
        for i in 0..<3 { tree.write("c/f\(i)", size: 1000, mtime: 1_000_000) }
        return tree
    }

    @Test func aMetricsFileInAMissingFolderIsAnErrorInBoth() throws {
        let tree = tree()
        // `run` used to print `ready`, fail to write the file, print `stop` and exit 1.
        try bothRefuse(tree, "dir.c.path = c\ndir.c.max_age = 1s\nmetrics_file = nowhere/cw.prom\n") {
            "\($0):3: metrics_file: cannot use the folder \(tree.path)/nowhere: No such file or directory; expected an existing folder"
        }
        tree.write("plain", size: 1)
        try bothRefuse(tree, "dir.c.path = c\ndir.c.max_age = 1s\nmetrics_file = plain/cw.prom\n") {
            "\($0):3: metrics_file: \(tree.path)/plain is not a folder; expected an existing folder"
        }
    }

    @Test func aControlSocketTooLongForASocketAddressIsAnErrorInBoth() throws {
        let tree = tree()
        let name = String(repeating: "s", count: 107 - tree.path.utf8.count) // 108 bytes with the slash
        try bothRefuse(tree, "dir.c.path = c\ndir.c.max_age = 1s\ncontrol_socket = \(name)\n") {
            "\($0):3: control_socket: \(tree.path)/\(name) is 108 bytes long; a socket address holds at most 107 (sun_path): choose a shorter path"
        }
        // 107 bytes is what fits: `run` listens there.
        let fits = String(repeating: "s", count: 106 - tree.path.utf8.count)
        try "dir.c.path = c\ncontrol_socket = \(fits)\n".write(
            toFile: tree.url("ok.conf"), atomically: true, encoding: .utf8)
        #expect(try runProcess(cachewardenBinary(), ["check", "--config", tree.url("ok.conf")]).status == 0)
        let cli = try RunningCLI(["run", "--config", tree.url("ok.conf")])
        #expect(
            eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } && tree.exists(fits) },
            "\(cli.stderr)")
        #expect(cli.interrupt() == 0)
    }

    @Test func aControlSocketFlagTooLongIsOneLineBeforeAnythingStarts() throws {
        let tree = tree()
        let socket = tree.url(String(repeating: "s", count: 120))
        let r = try runProcess(
            cachewardenBinary(), ["run", "--dir", tree.url("c"), "--max-age", "1s", "--control-socket", socket])
        #expect(r.status == 2 && r.out.isEmpty, "\(r)")
        #expect(
            r.err
                == "cachewarden: --control-socket: \(socket) is \(socket.utf8.count) bytes long; a socket address holds at most 107 (sun_path): choose a shorter path\n",
            "\(r.err)")
        for i in 0..<3 { #expect(tree.exists("c/f\(i)")) }
    }

    @Test func aFractionOfAByteIsAnErrorInBothNotNoQuota() throws {
        let tree = tree()
        try bothRefuse(tree, "dir.c.path = c\ndir.c.quota = 0.4B\n") {
            "\($0):2: bad value `0.4B` for dir.c.quota: `0.4B` is not a whole number of bytes; a size is a whole number of bytes below 8 EiB"
        }
    }

    @Test func aRootHoldingTheDefaultSocketIsRefusedByBoth() throws {
        let tree = tree()
        tree.mkdir("c/run")
        // Under systemd the socket defaults to $RUNTIME_DIRECTORY/cachewarden.sock: `run` refused a root holding it,
        // `check` did not know of it.
        try bothRefuse(tree, "dir.c.path = c\n", environment: ["RUNTIME_DIRECTORY": tree.url("c/run")]) {
            "\($0):1: dir.c.path: \(tree.path)/c holds CacheWarden's own control socket (\(tree.path)/c/run/cachewarden.sock); register a cache folder instead"
        }
    }
}
