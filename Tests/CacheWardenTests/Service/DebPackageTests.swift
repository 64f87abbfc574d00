import Foundation
import Glibc
import Testing

/// `make deb` from the static build `make build` made (CI's `.ci/run` makes it first), installed with `dpkg -i`:
/// the binary runs, the shipped config passes `check` while watching nothing, both units pass
/// `systemd-analyze verify`, `dpkg -r` leaves only the conffile and `dpkg -P` removes it too. Installs into the
/// real /usr, so it runs only where `CACHEWARDEN_INSTALL_TEST=1` asks for it, as root, on a machine without a
/// cachewarden package; the package is purged even when an expectation fails. Part of the serialized
/// `InstallTests` suite: `make deb` and `make install` share `.build-install` and its generated man page.
extension InstallTests {
    static let conffile = "/etc/cachewarden/cachewarden.conf"

    @Test(.enabled(if: ProcessInfo.processInfo.environment["CACHEWARDEN_INSTALL_TEST"] == "1",
                   "set CACHEWARDEN_INSTALL_TEST=1 to build and install the .deb (a static release build, minutes)"),
          .enabled(if: getuid() == 0 && which("dpkg-deb") != nil && which("make") != nil, "needs root, dpkg and make"),
          .timeLimit(.minutes(20)))
    func makeDebInstallsRunsAndRemovesCleanly() throws {
        let dpkg = try #require(which("dpkg"))
        let already = try runProcess(dpkg, ["-s", "cachewarden"])
        try #require(already.status != 0, "a cachewarden package is already installed; not touching it")

        let started = Date()
        let make = try runProcess(try #require(which("make")), ["-C", Self.packageRoot, "deb"])
        try #require(make.status == 0, "make deb failed: \(make.err.suffix(2000))")
        let built = Date()
        let debs = try FileManager.default.contentsOfDirectory(atPath: Self.packageRoot)
            .filter { $0.hasPrefix("cachewarden_") && $0.hasSuffix(".deb") }
        let deb = Self.packageRoot + "/" + (try #require(debs.first, "no .deb in \(Self.packageRoot)"))
        try Self.checkFieldsAndLintian(deb)

        defer { _ = try? runProcess(dpkg, ["-P", "cachewarden"]) }
        let install = try runProcess(dpkg, ["-i", deb])
        try #require(install.status == 0, "dpkg -i failed: \(install.out)\(install.err)")
        let installed = Date()

        let version = try runProcess("/usr/bin/cachewarden", ["--version"])
        #expect(version.status == 0 && !version.out.isEmpty, "\(version.err)")
        let check = try runProcess("/usr/bin/cachewarden", ["check", "--config", Self.conffile])
        // Every line a comment: it registers nothing, which `check` and `run` both refuse until it is edited.
        #expect(check.status == 2 && check.err.contains("no directory registered"), "\(check.out)\(check.err)")
        for (unit, user) in [("/usr/lib/systemd/system/cachewarden.service", false), ("/usr/lib/systemd/user/cachewarden.service", true)] {
            let text = try String(contentsOfFile: unit, encoding: .utf8)
            #expect(text.contains("ExecStart=/usr/bin/cachewarden run"), "\(unit)")
            let complaints = try Self.verify(text, user: user)
            #expect(complaints.isEmpty, "\(unit): \(complaints)")
        }
        let conffiles = try String(contentsOfFile: "/var/lib/dpkg/info/cachewarden.conffiles", encoding: .utf8)
        #expect(conffiles.contains(Self.conffile))

        let list = try runProcess(dpkg, ["-L", "cachewarden"])
        let files = list.out.split(separator: "\n").map(String.init).filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        #expect(files.contains("/usr/bin/cachewarden") && files.contains("/usr/share/man/man1/cachewarden.1.gz") && files.contains("/usr/share/man/man5/cachewarden.conf.5.gz")
                && files.contains("/usr/share/doc/cachewarden/copyright") && files.contains(Self.conffile), "\(files)")

        let remove = try runProcess(dpkg, ["-r", "cachewarden"])
        #expect(remove.status == 0, "\(remove.err)")
        let left = files.filter { FileManager.default.fileExists(atPath: $0) }
        #expect(left == [Self.conffile], "left after dpkg -r: \(left)")
        let purge = try runProcess(dpkg, ["-P", "cachewarden"])
        #expect(purge.status == 0, "\(purge.err)")
        #expect(!FileManager.default.fileExists(atPath: Self.conffile), "the conffile survived dpkg -P")

        let size = (try? FileManager.default.attributesOfItem(atPath: deb)[.size] as? Int) ?? 0
        print("deb: \(deb.split(separator: "/").last ?? "") \(size) bytes; \(files.count) files; make deb \(String(format: "%.1f", built.timeIntervalSince(started)))s, lintian + dpkg -i \(String(format: "%.1f", installed.timeIntervalSince(built)))s")
    }

    /// The control fields (libc6 at least 2.36: the binary's relocations are DT_RELR, the Makefile's LINK) and
    /// lintian: no error and no warning; the accepted info tags are listed in the Makefile.
    static func checkFieldsAndLintian(_ deb: String) throws {
        let fields = try runProcess(try #require(which("dpkg-deb")), ["-f", deb, "Depends", "Installed-Size", "Version"])
        let libc = fields.out.firstRange(of: "libc6 (>= ").map { fields.out[$0.upperBound...].prefix { $0 != ")" } }
        let dpkg = try #require(which("dpkg"))
        #expect(try libc.map { try runProcess(dpkg, ["--compare-versions", String($0), "ge", "2.36"]).status == 0 } == true, "\(fields.out)")
        #expect(fields.out.contains("Version: ") && fields.out.contains("Installed-Size: "), "\(fields.out)")
        if let lintian = which("lintian") {
            let l = try runProcess(lintian, [deb])
            let complaints = (l.out + l.err).split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
            #expect(complaints.isEmpty, "\(complaints)")
        }
    }

    /// packaging/raise-libc6 raises a lower libc6 requirement, keeps a higher one and adds a missing one.
    @Test(.enabled(if: which("dpkg") != nil, "needs dpkg"))
    func theLibc6RequirementIsRaisedNeverLowered() throws {
        let script = Self.packageRoot + "/packaging/raise-libc6"
        for (given, expected) in [("libc6 (>= 2.35), libgcc-s1 (>= 4.2)", "libc6 (>= 2.36), libgcc-s1 (>= 4.2)"),
                                  ("libc6 (>= 2.38), libgcc-s1 (>= 4.2)", "libc6 (>= 2.38), libgcc-s1 (>= 4.2)"),
                                  ("libgcc-s1 (>= 4.2)", "libc6 (>= 2.36), libgcc-s1 (>= 4.2)")] {
            let r = try runProcess(script, ["2.36"], stdin: given + "\n")
            #expect(r.status == 0 && r.out == expected + "\n", "\(given): \(r.out)\(r.err)")
        }
    }
}
