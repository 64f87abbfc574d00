import Foundation
import Glibc
import Testing

/// `make dist` (issue 31): the release tarball and its SHA256SUMS, from the static build `make build` made, and the
/// tarball's install.sh into a staged tree and out again; then (as root, with debootstrap) `make check-chroot`, the
/// tarball on a bare Debian 12. Part of the serialized `InstallTests` suite: all build in `.build-install`.
extension InstallTests {
    static let installTest = ProcessInfo.processInfo.environment["CACHEWARDEN_INSTALL_TEST"] == "1"

    /// The tarball's members, under its one folder.
    static let distFiles = [
        "INSTALL", "LICENSE", "LICENSE.libinotifytools", "bin/cachewarden", "etc/cachewarden/cachewarden.conf",
        "install.sh", "lib/systemd/system/cachewarden.service", "lib/systemd/user/cachewarden.service",
        "share/bash-completion/completions/cachewarden", "share/fish/vendor_completions.d/cachewarden.fish",
        "share/man/man1/cachewarden.1", "share/man/man5/cachewarden.conf.5", "share/zsh/site-functions/_cachewarden",
    ]

    /// `make dist`, returning the tarball's path.
    static func makeDist() throws -> String {
        let make = try runProcess(try #require(which("make")), ["-C", packageRoot, "dist"])
        try #require(make.status == 0, "make dist failed: \(make.err.suffix(2000))")
        // Its last line: "make dist: dist/<name>.tar.gz <size> bytes, sha256 ...".
        let line = try #require(
            make.out.split(separator: "\n").last { $0.hasPrefix("make dist: dist/") }, "\(make.out)")
        return packageRoot + "/" + line.split(separator: " ")[2]
    }

    @Test(
        .enabled(
            if: installTest, "set CACHEWARDEN_INSTALL_TEST=1 to run `make dist` (a static release build, minutes)"),
        .enabled(
            if: which("make") != nil && which("tar") != nil && which("sha256sum") != nil,
            "needs make, tar and sha256sum"),
        .timeLimit(.minutes(20)))
    func makeDistPacksTheReleaseAndItsInstallShInstallsAndUninstalls() throws {
        let tarball = try Self.makeDist()
        let name = String(tarball.split(separator: "/").last!)
        let folder = String(name.dropLast(".tar.gz".count))
        #expect(folder.hasPrefix("cachewarden-") && folder.contains("-linux-"), "\(name)")

        // SHA256SUMS names the tarball and matches it.
        let sums = try String(contentsOfFile: Self.packageRoot + "/dist/SHA256SUMS", encoding: .utf8)
        #expect(sums.hasSuffix("  \(name)\n"), "\(sums)")
        let check = try runProcess(
            "/bin/sh", ["-c", "cd \"$1\" && sha256sum -c SHA256SUMS", "-", Self.packageRoot + "/dist"])
        #expect(check.status == 0 && check.out.contains("\(name): OK"), "\(check.out)\(check.err)")

        // Members: one folder, the files listed and nothing else, owned by 0:0, dated the commit, sorted.
        let listing = try runProcess(
            try #require(which("tar")), ["--list", "--verbose", "--full-time", "--numeric-owner", "-z", "-f", tarball],
            environment: ["TZ": "UTC"])
        try #require(listing.status == 0, "\(listing.err)")
        let rows = listing.out.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        }
        let paths = rows.compactMap(\.last)
        let files = rows.filter { $0.first?.hasPrefix("-") == true }.compactMap(\.last)
        #expect(files.sorted() == Self.distFiles.map { "\(folder)/\($0)" }.sorted(), "\(files)")
        #expect(paths.allSatisfy { $0.hasPrefix(folder + "/") }, "\(paths)")
        #expect(paths == paths.sorted(), "not sorted by name: \(paths)")
        #expect(rows.allSatisfy { $0.count > 1 && $0[1] == "0/0" }, "owners: \(rows.map { $0.count > 1 ? $0[1] : "" })")
        let epoch = try runProcess(try #require(which("git")), ["-C", Self.packageRoot, "log", "-1", "--format=%ct"])
            .out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let commitTime = try runProcess(try #require(which("date")), ["-u", "-d", "@\(epoch)", "+%Y-%m-%d %H:%M:%S"])
            .out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let stamps = Set(rows.filter { $0.count > 4 }.map { "\($0[3]) \($0[4])" })
        #expect(stamps == [commitTime], "times \(stamps), the commit's \(commitTime)")
        for row in rows
        where row.last?.hasSuffix("/bin/cachewarden") == true || row.last?.hasSuffix("/install.sh") == true {
            #expect(row.first == "-rwxr-xr-x", "\(row)")
        }

        let tree = TemporaryTree("cw-dist")
        let untar = try runProcess(try #require(which("tar")), ["-xzf", tarball, "-C", tree.path])
        try #require(untar.status == 0, "\(untar.err)")
        let unpacked = tree.url(folder)
        let file = try runProcess(try #require(which("readelf")), ["-S", "-W", unpacked + "/bin/cachewarden"])
        #expect(!file.out.contains(".symtab") && !file.out.contains(".debug_info"), "the binary is not stripped")
        let portable = try runProcess(
            "/bin/bash", [Self.packageRoot + "/.ci/check-portable.sh", unpacked + "/bin/cachewarden"])
        #expect(portable.status == 0, "\(portable.out)\(portable.err)")
        let unit = try String(contentsOfFile: unpacked + "/lib/systemd/system/cachewarden.service", encoding: .utf8)
        #expect(
            unit.contains("ExecStart=/usr/local/bin/cachewarden run --config /etc/cachewarden/cachewarden.conf"),
            "\(unit)")
        let install = try String(contentsOfFile: unpacked + "/INSTALL", encoding: .utf8)
        #expect(!install.contains("@VERSION@") && install.contains("glibc 2.34"), "\(install)")

        // install.sh into a staged tree with another prefix and a config folder of its own, then --uninstall.
        tree.mkdir("stage")
        let stage = tree.url("stage")
        let env = ["PREFIX": "/opt/cw", "DESTDIR": stage, "SYSCONFDIR": "/etc/cw-test"]
        let installed = try runProcess("/bin/sh", [unpacked + "/install.sh"], environment: env)
        try #require(installed.status == 0, "install.sh: \(installed.out)\(installed.err)")
        for name in Self.distFiles where name.contains("/") && !name.hasPrefix("etc/") {
            #expect(
                FileManager.default.fileExists(atPath: stage + "/opt/cw/" + name), "install.sh did not install \(name)")
        }
        let staged = try String(
            contentsOfFile: stage + "/opt/cw/lib/systemd/system/cachewarden.service", encoding: .utf8)
        #expect(
            staged.contains("ExecStart=/opt/cw/bin/cachewarden run --config /etc/cw-test/cachewarden/cachewarden.conf"),
            "\(staged)")
        let user = try String(contentsOfFile: stage + "/opt/cw/lib/systemd/user/cachewarden.service", encoding: .utf8)
        #expect(user.contains("ExecStart=/opt/cw/bin/cachewarden run\n"), "\(user)")
        #expect(FileManager.default.fileExists(atPath: stage + "/etc/cw-test/cachewarden/cachewarden.conf"))
        let manifest = try String(contentsOfFile: stage + "/opt/cw/share/cachewarden/installed", encoding: .utf8)
        #expect(!manifest.contains(stage), "the manifest names the staging folder: \(manifest)")
        let again = try runProcess("/bin/sh", [unpacked + "/install.sh"], environment: env)
        #expect(again.status == 1 && again.err.contains("already installed"), "\(again.out)\(again.err)")
        let version = try runProcess(
            "/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", stage + "/opt/cw/bin/cachewarden", "--version"])
        #expect(version.status == 0 && !version.out.isEmpty, "\(version.err)")

        let removed = try runProcess("/bin/sh", [unpacked + "/install.sh", "--uninstall"], environment: env)
        #expect(removed.status == 0, "install.sh --uninstall: \(removed.out)\(removed.err)")
        let left = FileManager.default.enumerator(atPath: stage)?.allObjects as? [String] ?? []
        #expect(left.isEmpty, "left in the staged tree: \(left)")
        let size = (try? FileManager.default.attributesOfItem(atPath: tarball)[.size] as? Int) ?? 0
        print("dist: \(name) \(size) bytes, \(files.count) files; install.sh installed and removed them (DESTDIR)")
    }

    /// `make check-chroot` (.ci/check-chroot.sh): the tarball's binary alone in a Debian 12 minbase chroot without
    /// libinotifytools0 trims a folder over its quota, oldest first; install.sh installs there and --uninstall
    /// leaves the chroot as it was. The chroot comes from Debian's archive (10-40 s and 206 MB the first time;
    /// cached in .build-install/chroot), so the test needs root, debootstrap and the network.
    @Test(
        .enabled(
            if: installTest,
            "set CACHEWARDEN_INSTALL_TEST=1 to run `make check-chroot` (a static release build, minutes)"),
        .enabled(
            if: getuid() == 0 && which("debootstrap") != nil && which("unshare") != nil && which("make") != nil,
            "needs root, debootstrap, unshare and make"),
        .timeLimit(.minutes(20)))
    func theTarballRunsAndInstallsOnABareDebian12() throws {
        let make = try runProcess(
            try #require(which("make")), ["-C", Self.packageRoot, "--no-print-directory", "check-chroot"])
        #expect(make.status == 0, "make check-chroot failed: \(make.out.suffix(3000))\(make.err.suffix(3000))")
        let report = make.out.split(separator: "\n").filter { $0.hasPrefix("check-chroot:") || $0.hasPrefix("  {") }
        #expect(report.contains { $0.contains("left the chroot as it was") }, "\(make.out)")
        print(report.joined(separator: "\n"))
    }
}
