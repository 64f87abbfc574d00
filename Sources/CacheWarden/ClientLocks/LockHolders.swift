import Glibc

/// Who holds a lock on a file, from `/proc`: asked only when a lock was found busy, once per deferral.
///
/// `/proc/locks` lists every granted lock as `N: FLOCK|POSIX|OFDLCK ADVISORY READ|WRITE <pid> <maj>:<min>:<ino> …`,
/// but its pid is not always the holder's: a `flock` lock belongs to an open file, which a child inherits across
/// `fork` (the pid may be a parent that is gone), and an OFD lock shows `-1`. So each pid it names is checked in
/// `/proc/<pid>/fdinfo/*`, whose `lock:` lines are the locks held through that very descriptor; when none of them
/// holds it, every process's descriptors are looked at. A descriptor is taken as the file only from what `/proc`
/// says of it without touching the file: its `fdinfo`'s `ino:` and `mnt_id:` against those of this process's own
/// descriptor of the lock file (before Linux 5.14, no `ino:`: the `readlink` of `/proc/<pid>/fd/<n>` against ours).
/// Never `stat` through the link: that reaches the file's filesystem, and a hung NFS server would hang the daemon.
/// Processes of other users cannot be looked into without privileges: their pid is still reported as `/proc/locks`
/// gives it, where it lists the lock on the file's own device (an inode of that number on another filesystem is
/// another file; on a btrfs subvolume the devices differ, and such a holder is "another process").
///
/// The look is bounded: it runs on the engine's queue, once per `deferred` line (and once more past
/// `client_lock_wait`), never at a retry. At most `maxProcesses` processes are looked into, at most
/// `maxDescriptors` descriptors of each, for at most a quarter of a second in all (the deadline is looked at before
/// each process and each descriptor). A holder's command is its `comm` name (`/proc/<pid>/comm`, at most 15
/// characters, e.g. `cargo`), read for the first three holders, those a line names: never its command line
/// (`/proc/<pid>/cmdline` waits on the process's memory map, which a process stuck with it held never lets go).
enum LockHolders {
    static let maxProcesses = 4096
    static let maxDescriptors = 1024
    static let scanNanoseconds: UInt64 = 250_000_000
    static let named = 3

    /// The file a lock is on, as `/proc` shows this process's own descriptor of it.
    struct Target {
        let ino: UInt64
        let needle: String
        let mountID: Substring?
        let link: String?
        let deadline: UInt64
    }

    /// The holders of a lock on the file open as `fd` (this process's own descriptor is never one: it holds nothing).
    static func of(_ fd: Int32) -> [ClientLockHolder] {
        guard let st = try? Syscall.fstat(fd) else { return [] }
        let (ino, dev) = (UInt64(st.st_ino), UInt64(st.st_dev))
        let mine = FileContents.read("/proc/self/fdinfo/\(fd)", limit: 1 << 16).flatMap { field("mnt_id:", in: $0) }
        let target = Target(ino: ino, needle: ":\(ino) ", mountID: mine, link: Syscall.readLink("/proc/self/fd/\(fd)"),
                            deadline: monotonic() + scanNanoseconds)
        let listed = FileContents.read("/proc/locks", limit: 16 << 20).map { listedPIDs($0, ino: ino, dev: dev) } ?? Listed()
        var found = listed.pids.prefix(maxProcesses).filter { monotonic() < target.deadline && holds($0, target) }
        if found.isEmpty && listed.any {
            found = allPIDs().prefix(maxProcesses).filter { pid in
                monotonic() < target.deadline && !listed.pids.contains(pid) && holds(pid, target)
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

    /// Whether process `pid` holds a lock on the file through one of its descriptors (at most `maxDescriptors` of
    /// them looked at, until the deadline).
    private static func holds(_ pid: Int32, _ target: Target) -> Bool {
        names(in: "/proc/\(pid)/fdinfo", limit: maxDescriptors).contains { fd in
            guard monotonic() < target.deadline, let info = FileContents.read("/proc/\(pid)/fdinfo/\(fd)", limit: 1 << 20),
                  info.split(separator: "\n").contains(where: { $0.hasPrefix("lock:") && $0.contains(target.needle) })
            else { return false }
            return isFile(info, "/proc/\(pid)/fd/\(fd)", target)
        }
    }

    /// Whether a descriptor whose `fdinfo` is `info` is open on the target file: its inode and mount, else (no
    /// `ino:` line) its link's text and mount. Nothing here reaches the file itself.
    static func isFile(_ info: String, _ link: String, _ target: Target) -> Bool {
        guard let mountID = target.mountID, field("mnt_id:", in: info) == mountID else { return false }
        if let ino = field("ino:", in: info) { return UInt64(ino) == target.ino }
        guard let mine = target.link else { return false }
        return Syscall.readLink(link) == mine
    }

    /// The value of an `fdinfo` line `name` (e.g. `mnt_id:`), without its blanks.
    static func field(_ name: String, in info: String) -> Substring? {
        info.split(separator: "\n").first { $0.hasPrefix(name) }.map { $0.dropFirst(name.count).trimmingPrefix(while: \.isWhitespace) }
    }

    /// Every process's pid.
    private static func allPIDs() -> [Int32] { names(in: "/proc").compactMap { Int32($0) } }

    /// The names in a directory (but `.` and `..`); empty when it cannot be read.
    private static func names(in path: String, limit: Int = .max) -> [String] {
        guard let fd = try? Syscall.openDirectory(path: path) else { return [] }
        defer { Syscall.close(fd) }
        var out: [String] = []
        try? Syscall.readDirectory(fd) { if out.count < limit { out.append(String(cString: $0.name)) } }
        return out
    }

    /// `/proc/<pid>/comm`: the process's name (at most 15 characters), which the kernel keeps in the task itself:
    /// reading it never waits on the process's memory map, as `cmdline` does.
    static func command(of pid: Int32) -> String? {
        guard let raw = FileContents.read("/proc/\(pid)/comm", limit: 64) else { return nil }
        let name = String((raw.split(separator: "\n").first ?? "").map { $0.isASCII && ($0.asciiValue ?? 0) < 0x20 ? " " : $0 })
        return name.isEmpty ? nil : name
    }
}
