import Foundation
import Glibc
import Testing

/// `make rpm` (issue 31) from the static build `make build` made: what `rpm -qlp` lists, the config marked
/// `%config(noreplace)`, the systemd scriptlets, Requires: at most glibc 2.34 and no libinotifytools, and rpmlint
/// with no error. Builds with Debian's `rpm` package (rpmbuild); installs nothing. Part of the serialized
/// `InstallTests` suite: `make rpm` builds in `.build-install` too.
extension InstallTests {
    /// What the package holds (rpm -qlp), less rpm's /usr/lib/.build-id links, which follow the binary's build ID.
    static let rpmFiles = [
        "/etc/cachewarden", "/etc/cachewarden/cachewarden.conf", "/usr/bin/cachewarden",
        "/usr/lib/systemd/system/cachewarden.service", "/usr/lib/systemd/user/cachewarden.service",
        "/usr/share/bash-completion/completions/cachewarden", "/usr/share/fish/vendor_completions.d/cachewarden.fish",
        "/usr/share/licenses/cachewarden/LICENSE", "/usr/share/licenses/cachewarden/LICENSE.libinotifytools",
        "/usr/share/man/man1/cachewarden.1.gz", "/usr/share/man/man5/cachewarden.conf.5.gz",
        "/usr/share/zsh/site-functions/_cachewarden",
    ]

    @Test(
        .enabled(if: installTest, "set CACHEWARDEN_INSTALL_TEST=1 to run `make rpm` (a static release build, minutes)"),
        .enabled(
            if: which("rpmbuild") != nil && which("rpm") != nil && which("make") != nil,
            "needs rpmbuild, rpm (Debian's rpm package) and make"),
        .timeLimit(.minutes(20)))
    func makeRpmListsItsFilesMarksTheConfigAndPassesRpmlint() throws {
        let started = Date()
        let make = try runProcess(try #require(which("make")), ["-C", Self.packageRoot, "rpm"])
        try #require(make.status == 0, "make rpm failed: \(make.err.suffix(2000))")
        let built = Date()
        let version = try runProcess(
            try #require(which("sed")),
            [
                "-n", #"s/.*static let current = "\(.*\)".*/\1/p"#,
                Self.packageRoot + "/Sources/CacheWarden/API/CacheWardenVersion.swift",
            ]
        )
        .out.trimmingCharacters(in: .whitespacesAndNewlines)
        let arch = try runProcess(try #require(which("uname")), ["-m"]).out.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let package = Self.packageRoot + "/cachewarden-\(version)-1.\(arch).rpm"
        try #require(FileManager.default.fileExists(atPath: package), "no \(package)")
        let rpm = try #require(which("rpm"))

        let list = try runProcess(rpm, ["-qlp", package])
        try #require(list.status == 0, "\(list.err)")
        let files = list.out.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("/usr/lib/.build-id") }
        #expect(files == Self.rpmFiles, "rpm -qlp: \(files)")
        let config = try runProcess(rpm, ["-qcp", package])
        #expect(config.out == "/etc/cachewarden/cachewarden.conf\n", "\(config.out)")
        // %config(noreplace): RPMFILE_CONFIG (1) and RPMFILE_NOREPLACE (16).
        let flags = try runProcess(rpm, ["-qp", "--qf", "[%{FILEFLAGS} %{FILENAMES}\n]", package])
        #expect(flags.out.contains("17 /etc/cachewarden/cachewarden.conf\n"), "\(flags.out)")
        let licences = try runProcess(rpm, ["-qLp", package])
        #expect(licences.out.contains("/usr/share/licenses/cachewarden/LICENSE.libinotifytools"), "\(licences.out)")
        let modes = try runProcess(
            rpm, ["-qp", "--qf", "[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]", package])
        #expect(modes.out.contains("-rwxr-xr-x root:root /usr/bin/cachewarden\n"), "\(modes.out)")

        // The scriptlets: daemon-reload after install and removal, units disabled on erase, try-restart on upgrade.
        let scripts = try runProcess(rpm, ["-qp", "--scripts", package]).out
        #expect(scripts.contains("postinstall scriptlet") && scripts.contains("systemctl daemon-reload"), "\(scripts)")
        #expect(
            scripts.contains("preuninstall scriptlet") && scripts.contains("disable --now cachewarden.service"),
            "\(scripts)")
        #expect(
            scripts.contains("postuninstall scriptlet") && scripts.contains("try-restart cachewarden.service"),
            "\(scripts)")
        #expect(
            !scripts.contains("systemctl enable") && !scripts.contains("systemctl start"),
            "the package starts the service: \(scripts)")

        // Requires: from rpm's ELF dependency generator: glibc symbol versions at most 2.34, no libinotifytools.
        let requires = try runProcess(rpm, ["-qp", "--requires", package]).out
        #expect(
            requires.contains("libc.so.6(GLIBC_2.34)(64bit)") && !requires.contains("libinotifytools"), "\(requires)")
        let above = requires.split(separator: "\n").compactMap { line -> String? in
            guard let r = line.range(of: "(GLIBC_2.") else { return nil }
            let minor = Int(line[r.upperBound...].prefix { $0.isNumber }) ?? 0
            return minor > 34 ? String(line) : nil
        }
        #expect(above.isEmpty, "Requires: above glibc 2.34: \(above)")
        #expect(!requires.contains("GLIBC_ABI_DT_RELR"), "\(requires)")

        // Reproducible metadata (make check-repro compares two builds): the build host and time are fixed.
        let info = try runProcess(rpm, ["-qp", "--qf", "%{BUILDHOST} %{BUILDTIME} %{LICENSE}", package]).out
        let epoch = try runProcess(try #require(which("git")), ["-C", Self.packageRoot, "log", "-1", "--format=%ct"])
            .out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(info == "reproducible \(epoch) Apache-2.0 AND GPL-2.0-only", "\(info)")

        var lintTime = 0.0
        if let rpmlint = which("rpmlint") {
            let lintStarted = Date()
            let lint = try runProcess(rpmlint, ["-c", Self.packageRoot + "/packaging/rpmlint.toml", package])
            lintTime = Date().timeIntervalSince(lintStarted)
            let errors = lint.out.split(separator: "\n").filter { $0.contains(": E: ") }
            #expect(errors.isEmpty && lint.out.contains(" 0 errors"), "rpmlint: \(lint.out)\(lint.err)")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: package)[.size] as? Int) ?? 0
        print(
            "rpm: \(package.split(separator: "/").last ?? "") \(size) bytes; \(files.count) paths; make rpm \(String(format: "%.1f", built.timeIntervalSince(started)))s, rpmlint \(String(format: "%.1f", lintTime))s"
        )
    }
}
