import Foundation
import Glibc
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// The walkers' own directory reading (`getdents64` through `Syscall.readDirectory`, the listing's types sparing
/// the `lstat` of directories, and `openat2` confining the open of a listed directory to its parent's mount),
/// checked against libc's `readdir(3)` and against real mounts inside a registered root.
@Suite(.serialized) struct DirectoryListingTests {
    /// Every entry libc's `readdir` lists (but `.` and `..`), as (name, type, inode).
    static func readdirReference(_ path: String) -> Set<String> {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var entries = Set<String>()
        while let e = readdir(dir) {
            let name = withUnsafePointer(to: &e.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { entries.insert("\(name) \(e.pointee.d_type) \(e.pointee.d_ino)") }
        }
        return entries
    }

    static func listing(_ fd: FileDescriptor, fromStart: Bool = true) throws -> [String] {
        var entries: [String] = []
        try Syscall.readDirectory(fd, fromStart: fromStart) {
            entries.append("\(String(cString: $0.name)) \($0.type) \($0.ino)")
        }
        return entries
    }

    @Test func aListingIsWhatReaddirListsOverManyReads() throws {
        let tree = TemporaryTree()
        // 3,000 names of 60 bytes: about 240 KiB of records, several reads of 32 KiB.
        for i in 0..<3000 {
            tree.write("big/" + String(repeating: "n", count: 55) + String(format: "%05d", i), size: 0)
        }
        tree.write("big/sub/f", size: 1)
        symlink("/etc/hostname", tree.url("big/link"))
        mkfifo(tree.url("big/fifo"), 0o644)
        let folder = try Syscall.openDirectory(path: tree.url("big"))
        let first = try Self.listing(folder.fd, fromStart: false)
        #expect(first.count == 3003)
        #expect(Set(first).count == first.count, "an entry was listed twice")
        #expect(Set(first) == Self.readdirReference(tree.url("big")))
        // The descriptor stays usable: read again from the start, and from where the first listing ended.
        #expect(try Self.listing(folder.fd) == first)
        #expect(try Self.listing(folder.fd, fromStart: false).isEmpty)
        let types = Dictionary(
            first.map { ($0.split(separator: " ")[0], $0.split(separator: " ")[1]) }, uniquingKeysWith: { a, _ in a })
        #expect(types["sub"] == "\(DT_DIR)" && types["link"] == "\(DT_LNK)" && types["fifo"] == "\(DT_FIFO)")
    }

    /// `stat`'s type tests use the type bits as literals (the Glibc overlay's `S_IF*` are calls): they must agree
    /// with the C library's values and with what `lstat` says of a real file, folder, symlink and FIFO.
    @Test func theTypeTestsAgreeWithTheCLibrary() throws {
        let tree = TemporaryTree()
        _ = tree.write("f", size: 1)
        tree.mkdir("d")
        #expect(symlink("f", tree.path + "/l") == 0)
        #expect(mkfifo(tree.path + "/p", 0o600) == 0)
        for (name, type) in [("f", S_IFREG), ("d", S_IFDIR), ("l", S_IFLNK), ("p", S_IFIFO)] {
            let st = try Syscall.lstat(path: tree.path + "/" + name)
            #expect(st.st_mode & S_IFMT == type, "\(name)")
            #expect(st.isRegularFile == (type == S_IFREG), "\(name)")
            #expect(st.isDirectory == (type == S_IFDIR), "\(name)")
            #expect(st.isSymlink == (type == S_IFLNK), "\(name)")
        }
    }

    @Test func aListingOfAnEmptyDirectoryIsEmptyAndAFileIsAnError() throws {
        let tree = TemporaryTree()
        tree.write("f", size: 1)
        let folder = try Syscall.openDirectory(path: tree.path)
        #expect(try Self.listing(folder.fd) == ["f \(DT_REG) \(UInt64(try Syscall.lstat(path: tree.url("f")).st_ino))"])
        let file = try OwnedDescriptor.opening { open(tree.url("f"), O_RDONLY) }
        #expect(throws: Errno.notDirectory) { try Self.listing(file.fd) }
    }

    /// No mount inside a root is entered with `one_file_system` (the default): not a tmpfs, and not a bind mount of
    /// a folder of the root's own filesystem either, which `st_dev` cannot tell (the walk's `RESOLVE_NO_XDEV`
    /// open can); neither fails the scan. Without it, the bind mount is counted, as `du` counts it.
    @Test(.enabled(if: mountUnavailable == nil, "needs the right to mount"), arguments: testedBackends)
    func mountsInsideARootAreNotEnteredEvenOfTheSameFilesystem(_ backend: BackendChoice) throws {
        let tree = TemporaryTree(), outside = TemporaryTree()
        tree.write("a/f", size: 1000)
        tree.write("mnt/.keep", size: 0)
        tree.write("bound/.keep", size: 0)
        outside.write("g", size: 3000)
        #expect(mount("tmpfs", tree.url("mnt"), "tmpfs", 0, "size=1m") == 0)
        defer { unmount(tree.url("mnt")) }
        #expect(bindMount(outside.path, at: tree.url("bound")))
        defer { unmount(tree.url("bound")) }
        #expect(FileManager.default.createFile(atPath: tree.url("mnt/hidden"), contents: Data(count: 5000)))
        let h = try WatcherHarness(tree, basis: .apparent) {
            $0.backend = backend; $0.pollInterval = 1
        }
        #expect(h.total == 1000, "a mount was entered")
        #expect(h.files == 1)
        #expect(!h.log.names.contains("error"), "\(h.log.all)")
        // Neither is followed: a file written through the bind mount or into the tmpfs is not counted.
        tree.write("bound/h", size: 500)
        #expect(FileManager.default.createFile(atPath: tree.url("mnt/later"), contents: Data(count: 700)))
        tree.write("a/g", size: 10)
        #expect(eventually { h.total == 1010 && h.files == 2 }, "total \(h.total), \(h.files) files")
        // With one_file_system = false the bind mount of the same filesystem is counted too.
        let all = try WatcherHarness(tree, name: "all", basis: .apparent) {
            $0.backend = backend; $0.pollInterval = 1; $0.oneFileSystem = false
        }
        #expect(all.total == 4510 && all.files == 4, "total \(all.total), \(all.files) files")
        // … and followed: a file written there later, or rewritten, is counted (its stats cross the mount).
        tree.write("bound/h2", size: 50)
        tree.write("bound/h", size: 600)
        #expect(eventually { all.total == 4660 && all.files == 5 }, "total \(all.total), \(all.files) files")
    }

    /// overlayfs may list a directory under another inode number than `stat` gives it: the walk then checks the
    /// name with an `lstat` instead of calling the directory swapped. Every file of the merged view is counted.
    @Test(.enabled(if: overlayUnavailable == nil, "needs the right to mount an overlay"))
    func anOverlayIsReadWholeWhateverItsListedInodes() throws {
        let lower = TemporaryTree(), upper = TemporaryTree(), work = TemporaryTree(), merged = TemporaryTree()
        for i in 0..<20 { lower.write("d\(i % 4)/sub\(i % 2)/f\(i)", size: 100) }
        upper.write("d0/up", size: 50)
        let options = "lowerdir=\(lower.path),upperdir=\(upper.path),workdir=\(work.path)"
        #expect(mount("overlay", merged.path, "overlay", 0, options) == 0, "\(String(cString: strerror(errno)))")
        defer { umount2(merged.path, Int32(MNT_DETACH)) }
        let h = try WatcherHarness(merged, basis: .apparent)
        #expect(h.total == 2050 && h.files == 21, "total \(h.total), \(h.files) files")
        #expect(!h.log.names.contains("error"), "\(h.log.all)")
        merged.write("d3/sub1/new", size: 25)
        #expect(h.totalsMatchDisk(basis: .apparent))
    }
}

/// Why an overlay cannot be mounted here, or nil: one is tried.
let overlayUnavailable: String? = {
    if let reason = mountUnavailable { return reason }
    let lower = TemporaryTree(), upper = TemporaryTree(), work = TemporaryTree(), merged = TemporaryTree()
    let options = "lowerdir=\(lower.path),upperdir=\(upper.path),workdir=\(work.path)"
    guard mount("overlay", merged.path, "overlay", 0, options) == 0 else {
        return "cannot mount an overlay here (\(String(cString: strerror(errno))))"
    }
    umount2(merged.path, Int32(MNT_DETACH))
    return nil
}()
