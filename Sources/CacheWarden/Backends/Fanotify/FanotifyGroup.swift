import CFanotify
import Synchronization
import SystemPackage

/// One fanotify notification group (`FAN_REPORT_DFID_NAME`) and its filesystem marks: one mark per filesystem,
/// whatever the number of directories followed on it. Thread-safe: the walkers mark from their threads.
///
/// The backend keeps two, as the inotify backend keeps two instances (see `InotifyOpens`): the main group reports
/// what the totals need, and an opens group reports opens and closes of files, where a root tracks them. Opens are
/// the noisiest events, and with `FAN_ONDIR` — which the main group needs for directories created, deleted and
/// renamed — every directory a scan opens would be one more: on a tree of 20,000 directories the scan's own opens
/// overflowed the queue, and the re-read after the overflow overflowed it again, for ever. The opens group has no
/// `FAN_ONDIR`, so directories' opens are not reported at all, and its overflow costs only which files are open.
final class FanotifyGroup: Sendable {
    /// The main group's events: names created, deleted and renamed (directories too), files written and closed
    /// after writing, attributes, a followed directory deleted.
    static let mainEvents: UInt64 = CFAN_CREATE | CFAN_DELETE | CFAN_MODIFY | CFAN_CLOSE_WRITE | CFAN_ATTRIB
        | CFAN_DELETE_SELF | CFAN_ONDIR
    /// The opens group's: opens and closes of files (never of directories: no `FAN_ONDIR`).
    static let openEvents: UInt64 = CFAN_OPEN | CFAN_CLOSE_WRITE | CFAN_CLOSE_NOWRITE

    private let owner: OwnedDescriptor
    var fd: Int32 { owner.fd }
    /// What this group marks each filesystem for (`mainEvents` or `openEvents`).
    let events: UInt64
    /// The mask each filesystem is marked with, by fsid; and whether renames come paired (`FAN_RENAME`, Linux
    /// 5.17) or as separate halves.
    private let marks = Mutex<(masks: [UInt64: UInt64], pairsRenames: Bool)>(([:], true))

    init(events: UInt64) throws(Errno) {
        owner = OwnedDescriptor(try Syscall.retrying { cfan_init() })
        self.events = events
    }

    /// Marks the filesystem holding the open directory `directory` (whose key is `key`); nothing to do, and no
    /// system call, when it is marked already.
    func mark(filesystemOf directory: Int32, key: DirectoryKey) throws(Errno) {
        let fsid = key.filesystemID
        let renames = events & CFAN_ONDIR != 0   // the main group follows renames; the opens group does not
        let result: Result<Void, Errno> = marks.withLock { m in
            if m.masks[fsid] != nil { return .success(()) }
            let wanted = events | (renames ? (m.pairsRenames ? CFAN_RENAME : CFAN_MOVED_FROM | CFAN_MOVED_TO) : 0)
            do throws(Errno) {
                _ = try Syscall.retrying { cfan_mark_filesystem(fd, directory, wanted) }
            } catch {
                // Before Linux 5.17 there is no FAN_RENAME: renames then come as a deletion and a creation.
                guard renames, error == .invalidArgument, m.pairsRenames, m.masks.isEmpty else { return .failure(error) }
                m.pairsRenames = false
                let halves = events | CFAN_MOVED_FROM | CFAN_MOVED_TO
                do throws(Errno) { _ = try Syscall.retrying { cfan_mark_filesystem(fd, directory, halves) } } catch { return .failure(error) }
                m.masks[fsid] = halves
                return .success(())
            }
            m.masks[fsid] = wanted
            return .success(())
        }
        try result.get()
    }

    /// The kernel's `fs.fanotify.max_queued_events` (events a group queues before it overflows); nil when unreadable.
    static var maxQueuedEvents: Int? {
        let n = cfan_max_queued_events()
        return n > 0 ? Int(n) : nil
    }

    /// Filesystems marked now.
    var markCount: Int { marks.withLock { $0.masks.count } }

    /// Reads queued events into `buffer`; 0 when nothing is queued.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try Syscall.read(fd, into: buffer)
    }

    /// The key fanotify reports the open directory `directory` by.
    static func key(of directory: Int32) throws(Errno) -> DirectoryKey {
        var bytes = [UInt8](repeating: 0, count: Int(CFAN_KEY_MAX))
        let n = try bytes.withUnsafeMutableBufferPointer { b throws(Errno) in
            try Syscall.retrying { cfan_directory_key(directory, b.baseAddress!) }
        }
        return bytes.withUnsafeBytes { DirectoryKey(UnsafeRawBufferPointer(rebasing: $0[..<Int(n)])) }
    }

    /// Why a group cannot be had here, or nil when it can (tried once per process: a group is cheap to make).
    static let unavailability: String? = {
        do throws(Errno) {
            _ = try FanotifyGroup(events: mainEvents)
            // An unprivileged process may make a group (Linux 5.13) but not mark a filesystem.
            return hasSysAdmin ? nil : "fanotify's filesystem marks need CAP_SYS_ADMIN (run as root, or grant it with AmbientCapabilities=)"
        } catch {
            switch error {
            case .notPermitted: return "fanotify's filesystem marks need CAP_SYS_ADMIN (run as root, or grant it with AmbientCapabilities=)"
            case .invalidArgument: return "this kernel's fanotify cannot report names (FAN_REPORT_DFID_NAME needs Linux 5.9)"
            case .noFunction: return "this kernel has no fanotify (CONFIG_FANOTIFY)"
            default: return "fanotify_init failed: \(error)"
            }
        }
    }()

    /// Whether this process has `CAP_SYS_ADMIN` in its effective set (bit 21 of `CapEff` in /proc/self/status).
    private static var hasSysAdmin: Bool {
        guard let status = FileContents.read("/proc/self/status", limit: 1 << 16),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let bits = UInt64(line.dropFirst("CapEff:".count).trimmingPrefix(while: \.isWhitespace), radix: 16) else { return false }
        return bits & (1 << 21) != 0
    }
}
