import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Where `openat2` cannot be used — before Linux 5.6, or in a container whose seccomp profile predates it (Docker's
/// older profiles answer `EPERM` to system calls they do not know) — a trim still goes through the root's trash: each
/// file victim is moved there and checked before its `unlink`, and a unit leaves its client's view in one rename.
/// The daemon runs under a real seccomp filter (libseccomp's Python binding, Debian's `python3-seccomp`) that
/// answers `openat2` with `ENOSYS` or `EPERM`; inotifywait, watching the tree, is the independent witness of how
/// each victim left: moved out (`MOVED_FROM`), not deleted in place (`DELETE`).
@Suite(.serialized) struct NoOpenat2Tests {
    /// Debian's Python, which has the binding (a `python3` earlier on PATH may be another one).
    static let python = "/usr/bin/python3"

    /// Installs a filter answering `openat2` with errno `argv[1]`, then runs `argv[2...]`.
    static let filter = """
        import os, sys, seccomp
        f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        f.add_rule(seccomp.ERRNO(int(sys.argv[1])), "openat2")
        f.load()
        os.execv(sys.argv[2], sys.argv[2:])
        """

    /// Why the tests cannot run here (nil: they can): the real filter is loaded once, in front of `/bin/true`.
    static let unavailable: String? = {
        guard which("inotifywait") != nil else { return "needs inotifywait as an independent witness" }
        guard let r = try? runProcess(python, ["-c", filter, "\(ENOSYS)", "/bin/true"]), r.status == 0 else {
            return "needs \(python) with libseccomp's binding (apt-get install python3-seccomp) and a loadable filter"
        }
        return nil
    }()

    /// `args` of the CLI, run under the filter answering `openat2` with `refusal`.
    static func underFilter(_ refusal: Int32, _ args: [String]) -> [String] {
        ["-c", filter, "\(refusal)", cachewardenBinary()] + args
    }

    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: [ENOSYS, EPERM])
    func filesAndUnitsGoThroughTheTrashWithoutOpenat2(_ refusal: Int32) throws {
        let tree = TemporaryTree()
        let root = tree.url("cache")
        // Six files and four units of three files, 180 kB, the files older than the units.
        for f in 1...6 { tree.write("cache/file\(f)", size: 10_000, mtime: 1_000_000 + Double(f)) }
        for u in 1...4 {
            for f in 1...3 { tree.write("cache/u\(u)/f\(f)", size: 10_000, mtime: 2_000_000 + Double(u)) }
        }
        let config = tree.url("c.conf")
        try "size_basis = apparent\ndir.c.path = \(root)\ndir.c.quota = 200000\ndir.c.evict_unit = entry\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let witness = try RunningCLI(
            ["-m", "-q", "-r", "-e", "delete,moved_from", "--format", "%w%f|%e", root],
            executable: which("inotifywait")!)
        try #require(waitUntilWatching(witness.process.processIdentifier, count: 5))
        let daemon = try RunningCLI(Self.underFilter(refusal, ["run", "-c", config]), executable: Self.python)
        try #require(
            eventually { daemon.lines.contains { $0.contains("\"event\":\"ready\"") } }, "\(daemon.stderr)")
        // 150 kB more crosses the 200 kB quota: down to 100 kB, oldest first — the files, the units, then this. Written
        // beside the root and renamed in whole: a trim that saw it half-written would stop short of it.
        tree.write("new", size: 150_000)
        tree.rename("new", "cache/new")
        #expect(eventually { daemon.lines.contains { $0.contains("\"event\":\"trim\"") } }, "\(daemon.stderr)")
        let victims = (1...6).map { "file\($0)" } + (1...4).map { "u\($0)" } + ["new"]
        #expect(eventually { victims.allSatisfy { !tree.exists("cache/\($0)") } })
        #expect(eventually { !tree.exists("cache/\(TrashFolder.name)") }, "the trash is removed after the trim")
        #expect(daemon.interrupt() == 0, "\(daemon.stderr)")

        let evicted = daemon.lines.filter { $0.contains("\"event\":\"evict\"") }
        #expect(evicted.count == victims.count, "\(evicted)")
        #expect(
            !daemon.lines.contains { $0.contains("\"event\":\"error\"") },
            "\(daemon.lines.filter { $0.contains("error") })")
        #expect(!daemon.stderr.contains("trash"), "\(daemon.stderr)")
        // How each victim left its folder, as the witness saw it: the trash's removal is the last record it reads.
        #expect(eventually { witness.lines.contains { $0.hasPrefix("\(root)/\(TrashFolder.name)|DELETE") } })
        let seen = witness.lines
        for v in victims {
            #expect(seen.contains { $0.hasPrefix("\(root)/\(v)|MOVED_FROM") }, "\(v) was not moved out: \(seen)")
            #expect(!seen.contains { $0.hasPrefix("\(root)/\(v)|DELETE") }, "\(v) was deleted in place")
        }
        #expect(!seen.contains { $0.hasPrefix("\(root)/u") && $0.contains("/f") }, "a unit went file by file: \(seen)")
        print("NoOpenat2Tests (openat2 → errno \(refusal)): \(victims.count) victims moved into the trash first")
    }

    /// What is not CacheWarden's trash stays refused without `openat2`: a symlink of the trash's name to a folder
    /// that looks like one (its open fails with `ENOTDIR`), and a bind mount of another folder of the same
    /// filesystem there (the device cannot tell it; the mount ID does). Either way `check` and `run` refuse the
    /// root and nothing in the other folder is touched.
    @Test(.enabled(if: unavailable == nil, "\(unavailable ?? "")"), arguments: [ENOSYS, EPERM])
    func aTrashThatIsNotOursIsRefusedWithoutOpenat2(_ refusal: Int32) throws {
        let tree = TemporaryTree()
        tree.write("cache/old", size: 50_000, mtime: 1_000)
        tree.write("elsewhere/f-1-1", size: 100) // a name the trash would hold
        #expect(chmod(tree.url("elsewhere"), 0o700) == 0)
        let config = tree.url("c.conf")
        try "dir.c.path = \(tree.url("cache"))\ndir.c.quota = 1KB\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        var forms = ["a symlink"]
        #expect(symlink(tree.url("elsewhere"), tree.url("cache/\(TrashFolder.name)")) == 0)
        try expectRefused(refusal, config, tree, "a symlink")
        tree.remove("cache/\(TrashFolder.name)")
        if mountUnavailable == nil {
            tree.mkdir("cache/\(TrashFolder.name)")
            #expect(chmod(tree.url("cache/\(TrashFolder.name)"), 0o700) == 0)
            try #require(bindMount(tree.url("elsewhere"), at: tree.url("cache/\(TrashFolder.name)")))
            defer { unmount(tree.url("cache/\(TrashFolder.name)")) }
            try expectRefused(refusal, config, tree, "a bind mount")
            forms.append("a bind mount")
        }
        print("NoOpenat2Tests (openat2 → errno \(refusal)): refused as the trash: \(forms.joined(separator: ", "))")
    }

    private func expectRefused(_ refusal: Int32, _ config: String, _ tree: TemporaryTree, _ form: String) throws {
        for command in ["check", "run"] {
            let r = try runProcess(
                "/usr/bin/timeout", ["20", Self.python] + Self.underFilter(refusal, [command, "-c", config]))
            #expect(
                r.status == 2 && r.err.contains("is not CacheWarden's trash folder"), "\(form), \(command): \(r)")
        }
        #expect(tree.exists("elsewhere/f-1-1") && tree.exists("cache/old"), "\(form): something was deleted")
    }
}
