import CacheWardenFilesystem
import Glibc
import SystemPackage

/// Who holds a lock on a file, from `/proc`: asked only when a lock was found busy, once per deferral.
///
/// `/proc/locks` lists every granted lock as `N: FLOCK|POSIX|OFDLCK ADVISORY READ|WRITE <pid> <maj>:<min>:<ino> …`,
/// but its pid is not always the holder's: a `flock` lock belongs to an open file, which a child inherits across
/// `fork` (the pid may be a parent that is gone), and an OFD lock shows `-1`. So each pid it names is checked in
/// `/proc/<pid>/fdinfo/*`, whose `lock:` lines (the same format) are the locks held through that very descriptor;
/// when none of them holds it, every other process's descriptors are looked at. A descriptor holds the lock when one
/// of its `lock:` lines names the file's `MAJ:MIN:INO` exactly as `/proc/locks` does (its `ino:` first, when the
/// kernel gives one, 5.14 on, a fast filter): the same text in every mount namespace, unlike `mnt_id:` (a daemon
/// under `ProtectSystem=`/`PrivateTmp=` has its own namespace, its own mount IDs) or the `/proc/<pid>/fd` link (a
/// path in the holder's namespace). `MAJ:MIN` is the file's superblock's device, which `st_dev` is not on btrfs or
/// overlayfs: it is read from this process's `/proc/self/mountinfo` line for the mount of its own descriptor of the
/// file (its `mnt_id:`), the kernel's same number, and written as the kernel writes it in `/proc/locks` (hex, at least
/// two digits). Nothing here reaches the file: never `stat` through `/proc/<pid>/fd` (a hung NFS server would hang the
/// daemon). Processes of other users cannot be looked into without privileges: their pid is still reported as
/// `/proc/locks` gives it for the file's `MAJ:MIN:INO`.
///
/// btrfs: the subvolumes of one filesystem share its device in `/proc/locks`, and each numbers its inodes from 256,
/// so two files can show the same `MAJ:MIN:INO`. On btrfs, when `/proc/locks` lists more than one granted lock for
/// it, which is this file's cannot be told: no holder is named ("another process") rather than a wrong one.
///
/// The look is bounded: it runs on the engine's queue, once per `deferred` line (and once more past
/// `client_lock_wait`), never at a retry. At most `maxProcesses` processes are looked into (this one, which holds a
/// descriptor per lock it took, only when `/proc/locks` names it: a test's own lock); all the
/// descriptors (up to `maxListedDescriptors`) of a process `/proc/locks` names, at most `maxDescriptors` of each other
/// one (the lowest numbers); for at most a quarter of a second in all (the deadline is looked at before each process
/// and each descriptor, and while a directory is listed). A holder's command is its `comm` name (`/proc/<pid>/comm`,
/// at most 15 characters, e.g. `cargo`), read for the first three holders, those a line names: never its command
/// line (`/proc/<pid>/cmdline` waits on the process's memory map, which a process stuck with it held never lets go).
enum LockHolders {
    static let maxProcesses = 4096
    static let maxDescriptors = 1024
    static let maxListedDescriptors = 1 << 20
    static let scanNanoseconds: UInt64 = 250_000_000
    static let named = 3

    /// The file a lock is on: its inode, and its `MAJ:MIN:INO` as `/proc/locks` writes it.
    struct Target {
        let ino: UInt64
        let id: String
        let deadline: UInt64
    }

    /// The holders of a lock on the file open as `fd` (this process's own descriptor is never one: it holds nothing).
    static func of(_ fd: FileDescriptor) -> [ClientLockHolder] {
        guard let st = try? Syscall.fstat(fd) else { return [] }
        let ino = UInt64(st.st_ino)
        let mount = ownMount(of: fd)
        let target = Target(
            ino: ino, id: "\(mount?.device ?? device(UInt64(st.st_dev))):\(ino)",
            deadline: monotonic() + scanNanoseconds)
        let listed = FileContents.read("/proc/locks", limit: 16 << 20).map { listedPIDs($0, id: target.id) } ?? Listed()
        // Two locks on one btrfs MAJ:MIN:INO: another subvolume's file may be one of them.
        if listed.locks > 1 && mount?.type == "btrfs" { return [] }
        let me = getpid()
        var found = listed.pids.prefix(maxProcesses).filter { pid in
            monotonic() < target.deadline && holds(pid, target, limit: maxListedDescriptors)
        }
        if found.isEmpty && listed.locks > 0 {
            found = allPIDs(until: target.deadline).prefix(maxProcesses).filter { pid in
                pid != me && monotonic() < target.deadline && !listed.pids.contains(pid)
                    && holds(pid, target, limit: maxDescriptors)
            }
        }
        // Nobody found through its descriptors (another user's process): the pids /proc/locks gives for the file.
        if found.isEmpty { found = listed.pids }
        return Set(found).sorted().enumerated().map { i, pid in
            ClientLockHolder(pid: pid, command: i < named ? command(of: pid) : nil)
        }
    }

    /// What `/proc/locks` lists for a file's `MAJ:MIN:INO`: the pids of its granted locks (not the waiters, `->`;
    /// an OFD lock's pid, -1, left out) and how many granted locks there are.
    struct Listed: Equatable {
        var pids: [Int32] = []
        var locks = 0
    }

    static func listedPIDs(_ text: String, id: String) -> Listed {
        var out = Listed()
        for line in text.split(separator: "\n") where line.contains(id) && !line.contains("->") {
            let fields = line.split(separator: " ")
            // `N:`, the class, `ADVISORY`/`MANDATORY`, `READ`/`WRITE`, the pid, `maj:min:ino`, start, end.
            guard fields.count >= 6, fields[5] == id else { continue }
            out.locks += 1
            if let pid = Int32(fields[4]), pid > 0 { out.pids.append(pid) }
        }
        return out
    }

    /// `MAJ:MIN` as `/proc/locks` writes a device: each number in hex, at least two digits.
    static func device(major: UInt64, minor: UInt64) -> String {
        func hex(_ n: UInt64) -> String { n < 16 ? "0" + String(n, radix: 16) : String(n, radix: 16) }
        return "\(hex(major)):\(hex(minor))"
    }

    /// `st_dev` split as glibc's `major`/`minor` do: only when `mountinfo` does not say (it is not the superblock's
    /// device on btrfs or overlayfs).
    static func device(_ dev: UInt64) -> String {
        device(major: ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff), minor: (dev & 0xff) | ((dev >> 12) & ~0xff))
    }

    /// The device (as `/proc/locks` writes it) and filesystem type of the mount this process's descriptor `fd` is on:
    /// its `fdinfo`'s `mnt_id:`, found in this process's own `mountinfo` (the same namespace as that ID).
    static func ownMount(of fd: FileDescriptor) -> (device: String, type: String)? {
        guard let info = FileContents.read(fd.procInfoPath, limit: 1 << 16),
            let id = field("mnt_id:", in: info).flatMap({ UInt64($0) }),
            let mount = MountTable.current().mount(id: id)
        else { return nil }
        return lockDevice(of: mount)
    }

    /// A mount's device as `/proc/locks` writes it (mountinfo writes `MAJ:MIN` in decimal) and its type.
    static func lockDevice(of mount: MountTable.Mount) -> (device: String, type: String)? {
        let numbers = mount.device.split(separator: ":")
        guard numbers.count == 2, let major = UInt64(numbers[0]), let minor = UInt64(numbers[1]) else { return nil }
        return (device(major: major, minor: minor), mount.type)
    }

    private static func monotonic() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    /// Whether process `pid` holds a lock on the file through one of its descriptors (at most `limit` of them
    /// looked at, until the deadline).
    private static func holds(_ pid: Int32, _ target: Target, limit: Int) -> Bool {
        names(in: "/proc/\(pid)/fdinfo", limit: limit, until: target.deadline).contains { fd in
            guard monotonic() < target.deadline,
                let info = FileContents.read("/proc/\(pid)/fdinfo/\(fd)", limit: 1 << 20)
            else { return false }
            return isFile(info, target)
        }
    }

    /// Whether a descriptor whose `fdinfo` is `info` holds a lock on the target file: its `ino:` (when given) is
    /// the file's, and one of its `lock:` lines names the file's `MAJ:MIN:INO`. Nothing here reaches the file itself.
    static func isFile(_ info: String, _ target: Target) -> Bool {
        if let ino = field("ino:", in: info), UInt64(ino) != target.ino { return false }
        return info.split(separator: "\n").contains { line in
            line.hasPrefix("lock:") && !line.contains("->")
                && line.split(whereSeparator: \.isWhitespace).contains { $0 == target.id }
        }
    }

    /// The value of an `fdinfo` line `name` (e.g. `mnt_id:`), without its blanks.
    static func field(_ name: String, in info: String) -> Substring? {
        info.split(separator: "\n").first { $0.hasPrefix(name) }.map {
            $0.dropFirst(name.count).trimmingPrefix(while: \.isWhitespace)
        }
    }

    /// Every process's pid (those listed before the deadline).
    private static func allPIDs(until deadline: UInt64) -> [Int32] {
        names(in: "/proc", until: deadline).compactMap { Int32($0) }
    }

    /// The names in a directory (but `.` and `..`), the first `limit` of them, those listed before the deadline
    /// (looked at every 256 names: the listing itself goes to its end, a `getdents64` at a time); empty when it
    /// cannot be read.
    private static func names(in path: String, limit: Int = .max, until deadline: UInt64) -> [String] {
        guard let folder = try? Syscall.openDirectory(path: path) else { return [] }
        var out: [String] = []
        var open = true
        folder.borrow { listed in
            try? Syscall.readDirectory(listed) { entry in
                guard open, out.count < limit else { return }
                if out.count % 256 == 255 && monotonic() >= deadline { open = false }
                out.append(String(cString: entry.name))
            }
        }
        return out
    }

    /// `/proc/<pid>/comm`: the process's name (at most 15 characters), which the kernel keeps in the task itself:
    /// reading it never waits on the process's memory map, as `cmdline` does.
    static func command(of pid: Int32) -> String? {
        guard let raw = FileContents.read("/proc/\(pid)/comm", limit: 64) else { return nil }
        let name = String(
            (raw.split(separator: "\n").first ?? "").map { $0.isASCII && ($0.asciiValue ?? 0) < 0x20 ? " " : $0 })
        return name.isEmpty ? nil : name
    }
}
