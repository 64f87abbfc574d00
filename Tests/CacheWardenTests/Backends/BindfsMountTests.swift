import Foundation
import Glibc
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// The polling backend where inotify is blind: a real FUSE mount (`bindfs` of one temporary folder onto another),
/// registered with `backend = auto`, changed behind the mount's back (in the folder underneath, which the FUSE
/// daemon serves but this kernel's inotify never hears of). Reported as skipped, with the reason, without
/// /dev/fuse or bindfs (`.ci/deps.sh` installs it).
@Suite(.serialized) struct BindfsMountTests {
    /// A bindfs mount of a fresh folder; unmounted (`fusermount -u`) when dropped.
    final class Mount {
        let under = TemporaryTree("cw-under")
        let point = TemporaryTree("cw-mount")

        /// Throws what bindfs said when it cannot mount.
        init() throws {
            guard let bindfs = Self.bindfs else { throw ParseFailure(message: "bindfs is not installed") }
            let (status, message) = try Self.daemonize(bindfs, [under.path, point.path])
            guard status == 0 else { throw ParseFailure(message: "bindfs could not mount (\(message))") }
        }

        static let bindfs = ["/usr/bin/bindfs", "/bin/bindfs"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }

        /// Runs a program that leaves a daemon behind, through `system(3)`: Foundation's `Process` waits for
        /// its pipes and descriptors, which the daemon keeps. Returns the status and what it wrote on stderr.
        static func daemonize(_ path: String, _ args: [String]) throws -> (Int32, String) {
            let log = TemporaryTree("cw-bindfs-log")
            let command =
                ([path] + args).map { "'\($0)'" }.joined(separator: " ")
                + " </dev/null >/dev/null 2>'\(log.url("err"))'"
            let status = system(command)
            let message = (try? String(contentsOfFile: log.url("err"), encoding: .utf8)) ?? ""
            return (status, message.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        deinit {
            for tool in ["/usr/bin/fusermount", "/usr/bin/fusermount3", "/bin/fusermount"]
            where FileManager.default.isExecutableFile(atPath: tool) {
                if (try? runProcess(tool, ["-u", point.path]))?.status == 0 { return }
            }
            _ = umount2(point.path, Int32(MNT_DETACH))
        }
    }

    @Test(.enabled(if: unavailable == nil, "needs a bindfs mount (/dev/fuse and bindfs)"))
    func changesBehindAFuseMountAreSeenWithinAnIntervalAndTrimmed() throws {
        let mount = try Mount()
        #expect(try Syscall.fileSystemMagic(mount.point.path) == 0x6573_5546, "not a FUSE mount")
        let now = Date().timeIntervalSince1970
        for i in 0..<10 { mount.under.write("d\(i % 3)/f\(i)", size: 10_000, mtime: now - Double(1000 - i * 10)) }
        var dir = DirectorySettings(name: "fuse", path: mount.point.path, quota: 150_000)
        dir.pollInterval = 1 // backend: auto, the default
        var settings = WardenSettings(directories: [dir], sizeBasis: .apparent)
        settings.pollInterval = 1
        let log = EventLog()
        let watcher = Watcher(settings: settings) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        #expect(watcher.status().first?.backend == "poll", "auto did not poll a FUSE mount")
        func exact() -> Bool {
            let disk = diskTotals(mount.point.path, basis: .apparent)
            return watcher.totals().first.map { $0.total == disk.total && $0.files == disk.files } ?? false
        }
        #expect(watcher.totals().first?.total == 100_000)

        // Behind the mount's back: a new file, a new subtree, a deletion, a rename across directories.
        let changed = Date()
        mount.under.write("d0/new", size: 3_000)
        mount.under.write("fresh/deep/g", size: 2_000)
        try FileManager.default.removeItem(atPath: mount.under.url("d1/f1"))
        try FileManager.default.moveItem(atPath: mount.under.url("d2/f2"), toPath: mount.under.url("fresh/f2"))
        #expect(eventually(timeout: 5) { exact() })
        let seen = Date().timeIntervalSince(changed)
        print("bindfs: changes behind the mount seen after \(String(format: "%.2f", seen)) s (poll_interval 1 s)")
        #expect(seen < 4, "seen after \(seen) s: more than the interval, a pass and a loaded machine's slack")
        #expect(watcher.totals().first?.total == 95_000)

        // A quota crossing behind its back trims oldest first, through the mount, to half the quota.
        mount.under.write("d0/big", size: 60_000)
        #expect(eventually(timeout: 5) { !log.trims.isEmpty })
        let trim = try #require(log.trims.first)
        #expect(trim.total <= 75_000 && trim.reason == .quota)
        #expect(log.evictions.first?.file == "d0/f0")
        for e in log.evictions {
            #expect(
                !FileManager.default.fileExists(atPath: mount.under.url(e.file)),
                "\(e.file) has an evict line but exists")
        }
        #expect(eventually(timeout: 5) { exact() })
    }

    /// Why a bindfs mount cannot be had here, or nil: one is tried.
    static let unavailable: String? = {
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { return "no /dev/fuse here" }
        guard Mount.bindfs != nil else { return "bindfs is not installed (apt-get install bindfs; see .ci/deps.sh)" }
        do { _ = try Mount() } catch { return "\(error)" }
        return nil
    }()

    /// bindfs refuses `renameat2(RENAME_NOREPLACE)` (`EINVAL`): a unit cannot leave in one rename there, so it is
    /// deleted file by file, said once by an `error` line of kind `unit_not_atomic`; and every file is still
    /// deleted (its check in place, without the trash's move).
    @Test(.enabled(if: unavailable == nil, "needs a bindfs mount (/dev/fuse and bindfs)"))
    func unitsOnAMountWithoutAtomicRenamesGoFileByFile() throws {
        let mount = try Mount()
        for u in 0..<6 {
            for i in 0..<4 { mount.under.write("unit\(u)/f\(i)", size: 10_000, mtime: 1_000_000 + Double(u * 10 + i)) }
        }
        var dir = DirectorySettings(name: "fuse", path: mount.point.path, quota: 150_000)
        dir.evictUnit = .entry
        dir.pollInterval = 1
        var settings = WardenSettings(directories: [dir], sizeBasis: .apparent)
        settings.pollInterval = 1
        let log = EventLog()
        let watcher = Watcher(settings: settings) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        #expect(eventually(timeout: 10) { log.evictions.count >= 3 }, "\(log.all)")
        let notAtomic = log.all.filter {
            if case .error(let e) = $0.kind { return e.kind == "unit_not_atomic" }; return false
        }
        #expect(notAtomic.count == 1, "\(notAtomic)")
        for e in log.evictions {
            #expect(!FileManager.default.fileExists(atPath: mount.under.url(e.file)), "\(e.file) evicted but there")
        }
        #expect(
            eventually(timeout: 5) {
                watcher.totals().first?.total == diskTotals(mount.point.path, basis: .apparent).total
            })
    }
}
