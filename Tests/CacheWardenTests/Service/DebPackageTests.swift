import Foundation
import Glibc
import Testing

/// `make deb` from the static build `make build` made (CI's `.ci/run` makes it first), installed with `dpkg -i`:
/// the binary runs, the shipped config passes `check` while watching nothing, both units pass
/// `systemd-analyze verify`; an upgrade to a later version keeps an edited conffile; `dpkg -r` leaves only the
/// conffile and `dpkg -P` removes it too. Installs into the
/// real /usr, so it runs only where `CACHEWARDEN_INSTALL_TEST=1` asks for it, as root, on a machine without a
/// cachewarden package; the package is purged even when an expectation fails. Part of the serialized
/// `InstallTests` suite: `make deb` and `make install` share `.build-install` and its generated man page.
extension InstallTests {
    static let conffile = "/etc/cachewarden/cachewarden.conf"

    @Test(
        .enabled(
            if: ProcessInfo.processInfo.environment["CACHEWARDEN_INSTALL_TEST"] == "1",
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
        for (unit, user) in [
            ("/usr/lib/systemd/system/cachewarden.service", false), ("/usr/lib/systemd/user/cachewarden.service", true),
        ] {
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
        #expect(
            files.contains("/usr/bin/cachewarden") && files.contains("/usr/share/man/man1/cachewarden.1.gz")
                && files.contains("/usr/share/man/man5/cachewarden.conf.5.gz")
                && files.contains("/usr/share/doc/cachewarden/copyright") && files.contains(Self.conffile), "\(files)")

        // An upgrade: the same package with a later version (unpacked and rebuilt by dpkg-deb), over a conffile
        // the administrator edited. dpkg keeps the edit without asking: the shipped conffile did not change.
        let edit = "\n# edited before the upgrade\n"
        let handle = try #require(FileHandle(forWritingAtPath: Self.conffile))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(edit.utf8))
        try handle.close()
        let upgrade = try Self.repack(deb, version: "99.0.0")
        let upgraded = try runProcess(dpkg, ["-i", upgrade.path])
        #expect(upgraded.status == 0, "dpkg -i (upgrade) failed: \(upgraded.out)\(upgraded.err)")
        let now = try runProcess(try #require(which("dpkg-query")), ["-W", "-f=${Version} ${Status}", "cachewarden"])
        #expect(now.out == "99.0.0 install ok installed", "\(now.out)\(now.err)")
        #expect(
            (try? String(contentsOfFile: Self.conffile, encoding: .utf8))?.hasSuffix(edit) == true, "the edit was lost")
        #expect(
            !FileManager.default.fileExists(atPath: Self.conffile + ".dpkg-new"), "dpkg left the new conffile aside")
        let again = try runProcess("/usr/bin/cachewarden", ["--version"])
        #expect(again.status == 0 && !again.out.isEmpty, "\(again.err)")

        let remove = try runProcess(dpkg, ["-r", "cachewarden"])
        #expect(remove.status == 0, "\(remove.err)")
        let left = files.filter { FileManager.default.fileExists(atPath: $0) }
        #expect(left == [Self.conffile], "left after dpkg -r: \(left)")
        let purge = try runProcess(dpkg, ["-P", "cachewarden"])
        #expect(purge.status == 0, "\(purge.err)")
        #expect(!FileManager.default.fileExists(atPath: Self.conffile), "the conffile survived dpkg -P")

        let size = (try? FileManager.default.attributesOfItem(atPath: deb)[.size] as? Int) ?? 0
        print(
            "deb: \(deb.split(separator: "/").last ?? "") \(size) bytes; \(files.count) files; make deb \(String(format: "%.1f", built.timeIntervalSince(started)))s, lintian + dpkg -i \(String(format: "%.1f", installed.timeIntervalSince(built)))s"
        )
    }

    /// The control fields and lintian: no error and no warning; the accepted info tags are listed in the Makefile.
    /// Depends is dpkg-shlibdeps' (the Makefile no longer raises it): libc6 at most 2.34, the floor of the
    /// Makefile's LINK, and no libinotifytools0, whose archive is linked in and named by Built-Using.
    static func checkFieldsAndLintian(_ deb: String) throws {
        let fields = try runProcess(
            try #require(which("dpkg-deb")), ["-f", deb, "Depends", "Built-Using", "Installed-Size", "Version"])
        let libc = fields.out.firstRange(of: "libc6 (>= ").map { fields.out[$0.upperBound...].prefix { $0 != ")" } }
        let dpkg = try #require(which("dpkg"))
        #expect(
            try libc.map { try runProcess(dpkg, ["--compare-versions", String($0), "le", "2.34"]).status == 0 } == true,
            "\(fields.out)")
        #expect(!fields.out.contains("libinotifytools"), "\(fields.out)")
        #expect(fields.out.contains("Built-Using: inotify-tools (= "), "\(fields.out)")
        #expect(fields.out.contains("Version: ") && fields.out.contains("Installed-Size: "), "\(fields.out)")
        if let lintian = which("lintian") {
            let l = try runProcess(lintian, [deb])
            let complaints = (l.out + l.err).split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
            #expect(complaints.isEmpty, "\(complaints)")
        }
    }

    /// `deb` rebuilt with another version: unpacked with `dpkg-deb -R`, its Version: field changed, packed again.
    static func repack(_ deb: String, version: String) throws -> (tree: TemporaryTree, path: String) {
        let tree = TemporaryTree("cw-upgrade")
        let dpkgDeb = try #require(which("dpkg-deb"))
        let unpack = try runProcess(dpkgDeb, ["-R", deb, tree.url("root")])
        try #require(unpack.status == 0, "\(unpack.err)")
        let control = tree.url("root/DEBIAN/control")
        let fields = try String(contentsOfFile: control, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false
        )
        .map { $0.hasPrefix("Version: ") ? "Version: \(version)" : String($0) }
        try fields.joined(separator: "\n").write(toFile: control, atomically: true, encoding: .utf8)
        let path = tree.url("cachewarden_\(version).deb")
        let pack = try runProcess(dpkgDeb, ["--build", "--root-owner-group", tree.url("root"), path])
        try #require(pack.status == 0, "\(pack.err)")
        return (tree, path)
    }
}
