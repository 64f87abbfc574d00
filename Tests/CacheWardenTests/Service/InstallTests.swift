import Foundation
import Glibc
import Testing

/// `make install` into a temporary prefix (with `DESTDIR`, as a packager does): every file where the README says,
/// and a binary that needs no Swift runtime library. The release build with the static runtime takes minutes,
/// so the test runs where `CACHEWARDEN_INSTALL_TEST=1` asks for it (CI's `.ci/run` does); the build goes to its
/// own folder (`.build-install`), never waiting on the `.build` this test runs from.
@Suite struct InstallTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    @Test(.enabled(if: ProcessInfo.processInfo.environment["CACHEWARDEN_INSTALL_TEST"] == "1",
                   "set CACHEWARDEN_INSTALL_TEST=1 to run `make install` (a static release build, minutes)"),
          .enabled(if: which("make") != nil, "needs make"), .timeLimit(.minutes(20)))
    func makeInstallPutsAStandaloneBinaryManPageCompletionsAndUnitUnderThePrefix() throws {
        let stage = TemporaryTree("cw-stage")
        let prefix = "/opt/cachewarden-test"
        let make = try runProcess(try #require(which("make")),
                                  ["-C", Self.packageRoot, "install", "PREFIX=\(prefix)", "DESTDIR=\(stage.path)"])
        try #require(make.status == 0, "make install failed: \(make.err.suffix(2000))")
        let root = stage.path + prefix
        let expected = ["bin/cachewarden", "share/man/man1/cachewarden.1", "share/bash-completion/completions/cachewarden",
                        "share/zsh/site-functions/_cachewarden", "share/fish/vendor_completions.d/cachewarden.fish",
                        "lib/systemd/system/cachewarden.service"]
        for file in expected { #expect(FileManager.default.fileExists(atPath: root + "/" + file), "missing \(file)") }

        let binary = root + "/bin/cachewarden"
        let ldd = try runProcess(try #require(which("ldd")), [binary])
        #expect(ldd.status == 0 && !ldd.out.contains("libswift") && !ldd.out.contains("libFoundation") && !ldd.out.contains("not found"),
                "the binary needs: \(ldd.out)")
        // Run with an environment that cannot find a toolchain.
        let version = try runProcess("/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", binary, "--version"])
        #expect(version.status == 0 && !version.out.isEmpty, "\(version.err)")

        let man = try String(contentsOfFile: root + "/share/man/man1/cachewarden.1", encoding: .utf8)
        for command in ["run", "status", "trim", "clear", "reload", "events", "check"] { #expect(man.contains(command), "\(command) not in the man page") }
        let bash = try String(contentsOfFile: root + "/share/bash-completion/completions/cachewarden", encoding: .utf8)
        #expect(bash.contains("complete") && bash.contains("events"))
        let unit = try String(contentsOfFile: root + "/lib/systemd/system/cachewarden.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\(prefix)/bin/cachewarden run") && unit.contains("ExecReload=\(prefix)/bin/cachewarden reload"))
        #expect(unit.contains("Type=notify") && unit.contains("WatchdogSec=") && unit.contains("RuntimeDirectory=cachewarden"))
        print("install: \(expected.count) files under \(prefix); binary \((try? FileManager.default.attributesOfItem(atPath: binary)[.size]) ?? 0) bytes; ldd: \(ldd.out.split(separator: "\n").map { $0.split(separator: " ").first ?? "" }.joined(separator: " "))")
    }

    @Test(.enabled(if: which("systemd-analyze") != nil, "needs systemd-analyze (Debian's systemd package)"))
    func theUnitFilePassesSystemdAnalyzeVerify() throws {
        let tree = TemporaryTree()
        let unit = try String(contentsOfFile: Self.packageRoot + "/Examples/systemd/cachewarden.service", encoding: .utf8)
        // verify wants ExecStart's binary to exist: point it at the one the tests run.
        try unit.replacingOccurrences(of: "/usr/local/bin/cachewarden", with: cachewardenBinary())
            .write(toFile: tree.url("cachewarden.service"), atomically: true, encoding: .utf8)
        let r = try runProcess(try #require(which("systemd-analyze")), ["verify", tree.url("cachewarden.service")])
        let complaints = (r.out + r.err).split(separator: "\n").filter { $0.contains("cachewarden.service") }
        #expect(r.status == 0 && complaints.isEmpty, "\(r.out)\(r.err)")
    }
}
