import Foundation
import Glibc
import Testing

/// `make install` into a temporary prefix (with `DESTDIR`, as a packager does): every file where the README says,
/// and a binary that needs no Swift runtime library. The release build with the static runtime takes minutes,
/// so the test runs where `CACHEWARDEN_INSTALL_TEST=1` asks for it (CI's `.ci/run` does); the build goes to its
/// own folder (`.build-install`), never waiting on the `.build` this test runs from. Serialized: `make deb`
/// (DebPackageTests.swift) builds in the same folder.
@Suite(.serialized) struct InstallTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    @Test(
        .enabled(
            if: ProcessInfo.processInfo.environment["CACHEWARDEN_INSTALL_TEST"] == "1",
            "set CACHEWARDEN_INSTALL_TEST=1 to run `make install` (a static release build, minutes)"),
        .enabled(if: which("make") != nil, "needs make"), .timeLimit(.minutes(20)))
    func makeInstallPutsAStandaloneBinaryManPageCompletionsAndUnitUnderThePrefix() throws {
        let stage = TemporaryTree("cw-stage")
        let prefix = "/opt/cachewarden-test"
        let make = try runProcess(
            try #require(which("make")),
            ["-C", Self.packageRoot, "install", "PREFIX=\(prefix)", "DESTDIR=\(stage.path)"])
        try #require(make.status == 0, "make install failed: \(make.err.suffix(2000))")
        let root = stage.path + prefix
        let expected = [
            "bin/cachewarden", "share/man/man1/cachewarden.1", "share/man/man5/cachewarden.conf.5",
            "share/bash-completion/completions/cachewarden",
            "share/zsh/site-functions/_cachewarden", "share/fish/vendor_completions.d/cachewarden.fish",
            "lib/systemd/system/cachewarden.service", "lib/systemd/user/cachewarden.service",
        ]
        for file in expected { #expect(FileManager.default.fileExists(atPath: root + "/" + file), "missing \(file)") }

        let binary = root + "/bin/cachewarden"
        let ldd = try runProcess(try #require(which("ldd")), [binary])
        #expect(
            ldd.status == 0 && !ldd.out.contains("libswift") && !ldd.out.contains("libFoundation")
                && !ldd.out.contains("not found"),
            "the binary needs: \(ldd.out)")
        // Run with an environment that cannot find a toolchain.
        let version = try runProcess("/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", binary, "--version"])
        #expect(version.status == 0 && !version.out.isEmpty, "\(version.err)")

        let man = try String(contentsOfFile: root + "/share/man/man1/cachewarden.1", encoding: .utf8)
        for command in ["run", "status", "trim", "clear", "reload", "events", "check"] {
            #expect(man.contains(command), "\(command) not in the man page")
        }
        let bash = try String(contentsOfFile: root + "/share/bash-completion/completions/cachewarden", encoding: .utf8)
        #expect(bash.contains("complete") && bash.contains("events"))
        let unit = try String(contentsOfFile: root + "/lib/systemd/system/cachewarden.service", encoding: .utf8)
        #expect(
            unit.contains("ExecStart=\(prefix)/bin/cachewarden run")
                && unit.contains("ExecReload=\(prefix)/bin/cachewarden reload"))
        #expect(
            unit.contains("Type=notify") && unit.contains("WatchdogSec=")
                && unit.contains("RuntimeDirectory=cachewarden"))
        let user = try String(contentsOfFile: root + "/lib/systemd/user/cachewarden.service", encoding: .utf8)
        #expect(
            user.contains("ExecStart=\(prefix)/bin/cachewarden run\n")
                && user.contains("ExecReload=/bin/kill -HUP $MAINPID"))
        #expect(
            user.contains("Type=notify") && user.contains("WatchdogSec=") && user.contains("WantedBy=default.target"))
        // As installed, with ExecStart= pointing at the staged binary (verify wants it to exist).
        let complaints = try Self.verify(
            user.replacingOccurrences(of: "\(prefix)/bin/cachewarden", with: binary), user: true)
        #expect(complaints.isEmpty, "\(complaints)")
        print(
            "install: \(expected.count) files under \(prefix); binary \((try? FileManager.default.attributesOfItem(atPath: binary)[.size]) ?? 0) bytes; ldd: \(ldd.out.split(separator: "\n").map { $0.split(separator: " ").first ?? "" }.joined(separator: " "))"
        )
        let uninstall = try runProcess(
            try #require(which("make")),
            ["-C", Self.packageRoot, "uninstall", "PREFIX=\(prefix)", "DESTDIR=\(stage.path)"])
        #expect(uninstall.status == 0, "\(uninstall.err)")
        for file in expected {
            #expect(!FileManager.default.fileExists(atPath: root + "/" + file), "left behind: \(file)")
        }
    }

    @Test(.enabled(if: which("systemd-analyze") != nil, "needs systemd-analyze (Debian's systemd package)"))
    func theUnitFilesPassSystemdAnalyzeVerify() throws {
        for (file, user) in [("cachewarden.service", false), ("user/cachewarden.service", true)] {
            let unit = try String(contentsOfFile: Self.packageRoot + "/Examples/systemd/" + file, encoding: .utf8)
            // verify wants ExecStart's binary to exist: point it at the one the tests run.
            let complaints = try Self.verify(
                unit.replacingOccurrences(of: "/usr/local/bin/cachewarden", with: cachewardenBinary()), user: user)
            #expect(complaints.isEmpty, "\(file): \(complaints)")
        }
    }

    /// `systemd-analyze verify` on a unit's text: its complaints, or its failure. A user unit is checked by a
    /// user manager's rules (`--user`), which needs an XDG_RUNTIME_DIR; a folder of the test's own does.
    static func verify(_ unit: String, user: Bool) throws -> [String] {
        let tree = TemporaryTree()
        tree.mkdir("runtime")
        try unit.write(toFile: tree.url("cachewarden.service"), atomically: true, encoding: .utf8)
        let r = try runProcess(
            try #require(which("systemd-analyze")),
            (user ? ["--user"] : []) + ["verify", tree.url("cachewarden.service")],
            environment: user ? ["XDG_RUNTIME_DIR": tree.url("runtime")] : [:])
        let complaints = (r.out + r.err).split(separator: "\n").filter { $0.contains("cachewarden.service") }.map(
            String.init)
        return r.status == 0 ? complaints : complaints + ["exit status \(r.status): \(r.out)\(r.err)"]
    }
}
