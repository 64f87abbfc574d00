import Glibc

/// Who holds a lock on a file, from `/proc`: asked only when a lock was found busy, once per deferral.
///
/// `/proc/locks` lists every granted lock as `N: FLOCK|POSIX|OFDLCK ADVISORY READ|WRITE <pid> <maj>:<min>:<ino> …`,
/// but its pid is not always the holder's: a `flock` lock belongs to an open file, which a child inherits across
/// `fork` (the pid may be a parent that is gone), and an OFD lock shows `-1`. So each pid it names is checked in
/// `/proc/<pid>/fdinfo/*`, whose `lock:` lines are the locks held through that very descriptor; when none of them
/// holds it, every process's descriptors are looked at. A descriptor is taken as the file only when `stat` of
/// `/proc/<pid>/fd/<n>` gives its device and inode (`/proc/locks` names the filesystem's own device, which a btrfs
/// subvolume's or an overlay's `st_dev` is not, so the device is compared there). Processes of other users cannot
/// be looked into without privileges: their pid is still reported as `/proc/locks` gives it, where it lists the lock
/// on the file's own device (an inode of that number on another filesystem is another file; on a btrfs subvolume
/// the devices differ, and such a holder is "another process").
///
/// The look is bounded: it runs on the engine's queue, once per `deferred` line (and once more past
/// `client_lock_wait`), never at a retry. At most `maxProcesses` processes are looked into, for at most a quarter
/// of a second, and the command line (`/proc/<pid>/cmdline`, which waits on the process's memory map: a process
/// stuck with it held makes the read wait too) is read for the first three holders only, those a line names.
enum LockHolders {
    static let maxProcesses = 4096
    static let scanNanoseconds: UInt64 = 250_000_000
    static let named = 3

    /// The holders of a lock on the file open as `fd` (this process's own descriptor is never one: it holds nothing).
    static func of(_ fd: Int32) -> [ClientLockHolder] {
        guard let st = try? Syscall.fstat(fd) else { return [] }
        let file = (dev: UInt64(st.st_dev), ino: UInt64(st.st_ino))
        let needle = ":\(file.ino) "
        let listed = FileContents.read("/proc/locks", limit: 16 << 20).map { listedPIDs($0, ino: file.ino, dev: file.dev) } ?? Listed()
        var found = listed.pids.filter { holds($0, needle, file) }
        if found.isEmpty && listed.any {
            let deadline = monotonic() + scanNanoseconds
            found = allPIDs().prefix(maxProcesses).filter { pid in
                monotonic() < deadline && !listed.pids.contains(pid) && holds(pid, needle, file)
            }
        }
        // Nobody found through its descriptors (another user's process, a btrfs subvolume): the pids /proc/locks
        // gives for an inode of that number on this very device, never those of another filesystem's.
        if found.isEmpty { found = listed.onDevice.filter { $0 > 0 } }
        return Set(found).sorted().enumerated().map { i, pid in ClientLockHolder(pid: pid, command: i < named ? command(of: pid) : nil) }
    }

    /// What `/proc/locks` lists for an inode: the pids of granted locks on an inode of that number (not the waiters,
    /// `->`), those on the file's own device (`MAJ:MIN` in hex, as the kernel writes them), and whether any lock was
    /// listed at all (an OFD lock's pid is -1).
    struct Listed: Equatable {
        var pids: [Int32] = []
        var onDevice: [Int32] = []
        var any = false
    }

    static func listedPIDs(_ text: String, ino: UInt64, dev: UInt64) -> Listed {
        let needle = ":\(ino) "
        let device = (major: ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff), minor: (dev & 0xff) | ((dev >> 12) & ~0xff))
        var out = Listed()
        for line in text.split(separator: "\n") where line.contains(needle) && !line.contains("->") {
            let fields = line.split(separator: " ")
            // `N:`, the class, `ADVISORY`/`MANDATORY`, `READ`/`WRITE`, the pid, `maj:min:ino`, start, end.
            guard fields.count >= 6 else { continue }
            let id = fields[5].split(separator: ":")
            guard id.count == 3, UInt64(id[2]) == ino else { continue }
            out.any = true
            let pid = Int32(fields[4]) ?? -1
            if pid > 0 { out.pids.append(pid) }
            if UInt64(id[0], radix: 16) == device.major && UInt64(id[1], radix: 16) == device.minor { out.onDevice.append(pid) }
        }
        return out
    }

    private static func monotonic() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    /// Whether process `pid` holds a lock on the file through one of its descriptors.
    private static func holds(_ pid: Int32, _ needle: String, _ file: (dev: UInt64, ino: UInt64)) -> Bool {
        names(in: "/proc/\(pid)/fdinfo").contains { fd in
            guard let info = FileContents.read("/proc/\(pid)/fdinfo/\(fd)", limit: 1 << 20),
                  info.split(separator: "\n").contains(where: { $0.hasPrefix("lock:") && $0.contains(needle) }),
                  let st = followed("/proc/\(pid)/fd/\(fd)") else { return false }
            return UInt64(st.st_dev) == file.dev && UInt64(st.st_ino) == file.ino
        }
    }

    /// `stat(2)` through the link: what a `/proc/<pid>/fd/<n>` descriptor is open on.
    private static func followed(_ path: String) -> stat? {
        var st = stat()
        guard (try? Syscall.retrying({ stat(path, &st) })) != nil else { return nil }
        return st
    }

    /// Every process's pid.
    private static func allPIDs() -> [Int32] { names(in: "/proc").compactMap { Int32($0) } }

    /// The names in a directory (but `.` and `..`); empty when it cannot be read.
    private static func names(in path: String) -> [String] {
        guard let fd = try? Syscall.openDirectory(path: path) else { return [] }
        defer { Syscall.close(fd) }
        var out: [String] = []
        try? Syscall.readDirectory(fd) { out.append(String(cString: $0.name)) }
        return out
    }

    /// `/proc/<pid>/cmdline`, its NUL-separated arguments joined by spaces, at most 200 characters.
    static func command(of pid: Int32) -> String? {
        guard let raw = FileContents.read("/proc/\(pid)/cmdline", limit: 4096), !raw.isEmpty else { return nil }
        let words = raw.split(separator: "\0", omittingEmptySubsequences: true).joined(separator: " ")
        let printable = String(words.map { $0.isASCII && ($0.asciiValue ?? 0) < 0x20 ? " " : $0 })
        return printable.count > 200 ? String(printable.prefix(199)) + "…" : printable
    }
}
