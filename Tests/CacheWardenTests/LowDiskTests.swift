import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Low-disk warnings and purges on a small tmpfs (needs root and mount; skipped with a reason otherwise).
@Suite(.serialized) struct LowDiskTests {
    /// Mounts a 4 MiB tmpfs on a fresh folder; nil (and a printed reason) when mounting is not permitted.
    static func mountSmallTmpfs() -> TemporaryTree? {
        let tree = TemporaryTree("cw-tmpfs")
        let r = try? runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", tree.path])
        guard r?.status == 0 else {
            print("skipping: cannot mount a tmpfs here (\(r?.err.trimmingCharacters(in: .newlines) ?? "mount failed")); low-disk tests need root")
            return nil
        }
        return tree
    }

    static func unmount(_ tree: TemporaryTree) { _ = try? runProcess("/bin/umount", ["-l", tree.path]) }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func lowDiskIsReportedOncePerCrossingAndReArmedAboveTheMargin() throws {
        guard let fs = Self.mountSmallTmpfs() else { return }
        defer { Self.unmount(fs) }
        let log = EventLog()
        let watcher = Watcher(settings: WardenSettings(
            directories: [DirectorySettings(name: "t", path: fs.path)], lowDiskFree: .percent(50), lowDiskInterval: 1)) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        func lowDisks() -> [LowDiskReport] { log.all.compactMap { if case .lowDisk(let l) = $0.kind { return l }; return nil } }
        fs.write("big1", size: 2_500_000)   // free < 50 % of 4 MiB
        #expect(eventually { lowDisks().count == 1 })
        let first = try #require(lowDisks().first)
        #expect(first.dirs == ["t"])
        #expect(first.free < first.threshold)
        #expect(first.size == 4 * 1024 * 1024)
        // Hovering below the threshold: more writes and timer ticks, no second line.
        fs.write("small", size: 10_000)
        usleep(2_500_000)
        #expect(lowDisks().count == 1)
        // Back above threshold + margin, then below again: a second line.
        fs.remove("big1")
        fs.remove("small")
        usleep(2_500_000)
        fs.write("big2", size: 2_500_000)
        #expect(eventually { lowDisks().count == 2 })
        let trimmed = try JSONSerialization.jsonObject(with: Data(WardenEvent(.lowDisk(first)).jsonLine().utf8)) as! [String: Any]
        #expect(trimmed["mount"] as? String == fs.path)
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func lowDiskTrimPurgesOldestFirstUntilFreeSpaceIsBack() throws {
        guard let fs = Self.mountSmallTmpfs() else { return }
        defer { Self.unmount(fs) }
        for i in 0..<8 { fs.write("old\(i)", size: 300_000, mtime: Double(1_000_000 + i)) }
        let log = EventLog()
        let watcher = Watcher(settings: WardenSettings(
            directories: [DirectorySettings(name: "t", path: fs.path)], lowDiskFree: .percent(50),
            lowDiskAction: .trim, lowDiskInterval: 1)) { log.append($0) }
        try watcher.start()
        defer { watcher.stop() }
        #expect(eventually { log.trims.contains { $0.reason == .lowDisk } })
        #expect(!fs.exists("old0"))
        #expect(fs.exists("old7"))
        var vfs = statvfs()
        statvfs(fs.path, &vfs)
        #expect(Int64(vfs.f_bavail) * Int64(vfs.f_frsize) > 2 * 1024 * 1024)
    }
}
