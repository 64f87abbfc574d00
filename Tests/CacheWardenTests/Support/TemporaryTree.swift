import Foundation
import Glibc
@testable import CacheWarden

/// A fresh folder under /tmp (or `base`) for one test, removed when the test drops it.
final class TemporaryTree: Sendable {
    let path: String

    init(_ label: String = "cw", under base: String = "/tmp") {
        var template = Array("\(base)/\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(cString: made!)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func url(_ relative: String) -> String { relative.isEmpty ? path : path + "/" + relative }

    /// Creates `relative` (and its folders) with `size` bytes of data, then closes it.
    @discardableResult
    func write(_ relative: String, size: Int, mtime: Double? = nil) -> String {
        let full = url(relative)
        mkdirs(PathResolver.parent(of: full))
        let fd = open(full, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0, "open \(full): \(errno)")
        var remaining = size
        let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
        while remaining > 0 {
            let n = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, min(remaining, $0.count)) }
            precondition(n > 0)
            remaining -= n
        }
        close(fd)
        if let mtime { setMtime(relative, mtime) }
        return full
    }

    func append(_ relative: String, size: Int) {
        let fd = open(url(relative), O_WRONLY | O_APPEND)
        precondition(fd >= 0)
        let bytes = [UInt8](repeating: 0x62, count: size)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, size) }
        close(fd)
    }

    func truncate(_ relative: String, to size: Int) { _ = Glibc.truncate(url(relative), off_t(size)) }

    /// Sets the modification time (seconds since 1970).
    func setMtime(_ relative: String, _ seconds: Double) {
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, url(relative), &times, 0)
    }

    func mkdirs(_ full: String) {
        try? FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
    }
    func mkdir(_ relative: String) { mkdirs(url(relative)) }
    func remove(_ relative: String) { try? FileManager.default.removeItem(atPath: url(relative)) }
    func rename(_ from: String, _ to: String) {
        precondition(Glibc.rename(url(from), url(to)) == 0, "rename \(from) → \(to): \(errno)")
    }
    func exists(_ relative: String) -> Bool { var st = stat(); return lstat(url(relative), &st) == 0 }
}

/// A fresh, independent scan of a folder: regular files only, hard links once, symlinks not followed, and
/// CacheWarden's trash at the top not counted (what is there has left the cache already) — the truth the
/// watcher's running totals are compared with.
func diskTotals(_ path: String, basis: SizeBasis = .allocated) -> (total: Int64, files: Int) {
    var seen = Set<UInt64>()
    var total: Int64 = 0
    var stack = [path]
    while let dir = stack.popLast() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
        for name in names where !(dir == path && name == TrashFolder.name) {
            let full = dir + "/" + name
            var st = stat()
            guard lstat(full, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR: stack.append(full)
            case S_IFREG:
                if seen.insert(UInt64(st.st_ino)).inserted {
                    total += basis == .allocated ? Int64(st.st_blocks) * 512 : Int64(st.st_size)
                }
            default: break
            }
        }
    }
    return (total, seen.count)
}

/// Polls `condition` every `interval` seconds (10 ms unless told) until it holds or `timeout` seconds pass; returns
/// whether it held.
@discardableResult
func eventually(timeout: Double = 20, every interval: Double = 0.01, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(useconds_t(interval * 1e6))
    }
    return condition()
}

extension TemporaryTree {
    /// A folder outside every cache place (`CachePlaces`) and not protected, where only a `CACHEDIR.TAG` or
    /// `allow_any_path` makes a folder a cache: `/srv/cachewarden-tests` (as root), else the package's own
    /// `.build` folder when the checkout is not itself in a cache place (a clone under `/tmp` is).
    static let outsideCachePlaces: String = {
        let candidates = [
            "/srv/cachewarden-tests", FileManager.default.currentDirectoryPath + "/.build/not-a-cache-place",
        ]
        for base in candidates
        where CachePlaces(homes: [], environment: DefaultLocations(environment: [:], euid: 0)).place(of: base) == nil {
            if (try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)) != nil,
                access(base, W_OK) == 0
            {
                return base
            }
        }
        return candidates[1]
    }()
}

/// Whether this process may mount (a tmpfs, a bind mount): root in a namespace that allows it. Nil when it may,
/// else why not (for `.enabled(if:)`).
let mountUnavailable: String? = {
    guard geteuid() == 0 else { return "needs root to mount" }
    let probe = TemporaryTree("cw-mount-probe")
    guard mount("tmpfs", probe.path, "tmpfs", 0, "size=64k") == 0 else {
        return "cannot mount here (\(String(cString: strerror(errno))))"
    }
    umount2(probe.path, Int32(MNT_DETACH))
    return nil
}()

/// Bind-mounts `source` at `target` (`recursive`: with the mounts under it, `mount --rbind`); the test unmounts
/// with `unmount`.
func bindMount(_ source: String, at target: String, recursive: Bool = false) -> Bool {
    mount(source, target, nil, UInt(MS_BIND) | (recursive ? UInt(MS_REC) : 0), nil) == 0
}

/// Detaches the mount at `target` (and, lazily, every mount under it).
func unmount(_ target: String) {
    umount2(target, Int32(MNT_DETACH))
}
