import Foundation
import Glibc
import SystemPackage

/// Small filesystem chores shared by the benchmarks.
enum Files {
    /// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`; `false` on any other error.
    static func writeAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd.rawValue, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// Creates `path` and its missing parents.
    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw BenchError("cannot create \(path): \(error.localizedDescription)")
        }
    }

    /// `rm -rf path` in a child process (quiet; a missing path is fine).
    static func removeTree(_ path: String) {
        guard !path.isEmpty, path != "/" else { return }
        if let child = try? Child("/bin/rm", ["-rf", "--", path], stdout: .null, stderr: .inherit, cleanup: true) {
            child.wait()
        }
    }

    /// Where `discard` puts what is done with (inside the work folder); `nil`: delete at once.
    static let trashDirectory = Locked<String?>(nil)
    private static let discarded = Locked(0)

    /// Moves `path` (file or tree) into the trash folder instead of deleting it now; the trash goes with the work
    /// folder at the very end. Deleting between measurements would skew them: ext4 without a journal skips, one by
    /// one, every inode freed in the last 30 s when it allocates a new one, so file creation right after a large
    /// `rm -rf` is much slower.
    /// When less than a third of the filesystem is free, though, the trash is emptied and `path` removed at once:
    /// a skewed measurement is better than a full disk (a small tmpfs fills up in the full mode).
    static func discard(_ path: String) {
        guard let trash = trashDirectory.value else { removeTree(path); return }
        var vfs = statvfs()
        if statvfs((trash as NSString).deletingLastPathComponent, &vfs) == 0,
            vfs.f_bavail < vfs.f_blocks / 3
        {
            removeTree(trash)
            removeTree(path)
            return
        }
        mkdir(trash, 0o755)
        let n = discarded.withLock { n -> Int in
            n += 1; return n
        }
        let target = "\(trash)/\(n)-\((path as NSString).lastPathComponent)"
        if rename(path, target) != 0 && errno != ENOENT { removeTree(path) }
    }

    /// Writes `paths` NUL-separated to `file` (the input of `xargs -0`).
    static func writeList(_ paths: [String], to file: String) throws {
        var bytes: [UInt8] = []
        for p in paths {
            bytes.append(contentsOf: p.utf8)
            bytes.append(0)
        }
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes)) else {
            throw BenchError("cannot write \(file)")
        }
    }

    /// Creates a fresh temporary folder `cachewarden-bench-XXXXXX` under `base`.
    static func makeWorkDirectory(under base: String) throws -> String {
        try makeDirectory(base)
        var template = Array("\(base)/cachewarden-bench-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw BenchError("cannot create a temporary folder under \(base): \(String(cString: strerror(errno)))")
        }
        // The canonical path (symlinks in `base` resolved), so that paths match the watcher's.
        guard let real = realpath(made, nil) else { return String(cString: made) }
        defer { free(real) }
        return String(cString: real)
    }
}
