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
/// be looked into without privileges: their pid is still reported as `/proc/locks` gives it.
enum LockHolders {
    /// The holders of a lock on the file open as `fd` (this process's own descriptor is never one: it holds nothing).
    static func of(_ fd: Int32) -> [ClientLockHolder] {
        guard let st = try? Syscall.fstat(fd) else { return [] }
        let file = (dev: UInt64(st.st_dev), ino: UInt64(st.st_ino))
        let needle = ":\(file.ino) "
        let listed = listedPIDs(needle)
        var found = listed.pids.filter { holds($0, needle, file) }
        if found.isEmpty && listed.any {
            found = allPIDs().filter { !listed.pids.contains($0) && holds($0, needle, file) }
        }
        if found.isEmpty { found = listed.pids.filter { $0 > 0 } }
        return Set(found).sorted().map { ClientLockHolder(pid: $0, command: command(of: $0)) }
    }

    /// The pids `/proc/locks` gives for granted locks on an inode of that number (not the waiters, `->`), and
    /// whether any lock was listed at all (an OFD lock's pid is -1).
    private static func listedPIDs(_ needle: String) -> (pids: [Int32], any: Bool) {
        guard let text = FileContents.read("/proc/locks", limit: 16 << 20) else { return ([], false) }
        var pids: [Int32] = []
        var any = false
        for line in text.split(separator: "\n") where line.contains(needle) && !line.contains("->") {
            let fields = line.split(separator: " ")
            // `N:`, the class, `ADVISORY`/`MANDATORY`, `READ`/`WRITE`, the pid, `maj:min:ino`, start, end.
            guard fields.count >= 6, fields[5].hasSuffix(needle.dropLast()) else { continue }
            any = true
            if let pid = Int32(fields[4]), pid > 0 { pids.append(pid) }
        }
        return (pids, any)
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
