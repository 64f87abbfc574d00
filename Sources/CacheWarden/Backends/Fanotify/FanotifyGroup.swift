import CFanotify
import CacheWardenFilesystem
import Synchronization
import SystemPackage

/// One fanotify notification group (`FAN_REPORT_DFID_NAME`) and its filesystem marks: one mark per filesystem,
/// whatever the number of directories followed on it. Thread-safe: the walkers mark from their threads.
///
/// The backend keeps two, as the inotify backend keeps two instances (see `InotifyOpens`): the main group reports
/// what the totals need, and an opens group reports opens and closes of files, where a root tracks them. Opens are
/// the noisiest events, and with `FAN_ONDIR` — which the main group needs for directories created, deleted and
/// renamed — every directory a scan opens would be one more. The opens group has no `FAN_ONDIR`, so directories'
/// opens are not reported at all.
///
/// A filesystem mark reports every change on the filesystem, not only under the followed directories, and nothing
/// is read while the engine scans or trims: with fanotify's default bound (16,384 events) a busy filesystem
/// overflowed the queue during a long scan, and the re-read after the overflow overflowed it again. The queues are
/// therefore unbounded (`FAN_UNLIMITED_QUEUE`, allowed with `CAP_SYS_ADMIN`): what accumulates while the engine
/// is busy is held in kernel memory until it is read.
final class FanotifyGroup: Sendable {
    /// The main group's events: names created, deleted and renamed (directories too), files written and closed
    /// after writing, attributes, a followed directory deleted or moved away.
    static let mainEvents: UInt64 =
        CFAN_CREATE | CFAN_DELETE | CFAN_MODIFY | CFAN_CLOSE_WRITE | CFAN_ATTRIB
        | CFAN_DELETE_SELF | CFAN_MOVE_SELF | CFAN_ONDIR
    /// The opens group's: opens and closes of files (never of directories: no `FAN_ONDIR`).
    static let openEvents: UInt64 = CFAN_OPEN | CFAN_CLOSE_WRITE | CFAN_CLOSE_NOWRITE

    private let owner: OwnedDescriptor
    var fd: FileDescriptor { owner.fd }
    /// What this group marks each filesystem for (`mainEvents` or `openEvents`).
    let events: UInt64
    /// The filesystems marked, by device (with the bits marked and the fsid events name it by); which device each
    /// fsid belongs to; the devices that could not be marked, and why; whether renames come paired (`FAN_RENAME`,
    /// Linux 5.17) or as separate halves.
    private let marks = Mutex<
        (
            devices: [UInt64: (mask: UInt64, fsid: UInt64)], owners: [UInt64: UInt64], refused: [UInt64: Errno],
            pairsRenames: Bool
        )
    >(([:], [:], [:], true))

    /// A group; `bounded` keeps fanotify's default queue bound (tests that make it overflow).
    init(events: UInt64, bounded: Bool = false) throws(Errno) {
        owner = try OwnedDescriptor.opening { cfan_init(bounded ? 0 : 1) }
        self.events = events
    }

    /// Marks the filesystem holding the open directory `directory` (on `device`) and returns its fsid. Nothing to
    /// do, and no system call, when it is marked already, unless `again` (the top of a walk: a filesystem
    /// unmounted and mounted again lost its mark, and may have taken another's device number; FAN_MARK_ADD is
    /// idempotent). The fsid is asked of the kernel (`fstatfs`) only then, not for every directory. A filesystem
    /// whose fsid another one has already (a cloned image, some overlays) is refused with `EXDEV`: their events
    /// could not be told apart. A filesystem that could not be marked is refused again at once.
    func mark(filesystemOf directory: FileDescriptor, device: UInt64, again: Bool = false) throws(Errno) -> UInt64 {
        let renames = events & CFAN_ONDIR != 0 // the main group follows renames; the opens group does not
        let result: Result<UInt64, Errno> = marks.withLock { m in
            if let refusal = m.refused[device] { return .failure(refusal) }
            if let known = m.devices[device], !again { return .success(known.fsid) }
            let fsid: UInt64
            do throws(Errno) { fsid = try Syscall.fileSystem(of: directory).id } catch { return .failure(error) }
            if let owner = m.owners[fsid], owner != device { return .failure(.improperLink) }
            // Marked again with another fsid: the device number went to another filesystem; the old one is free.
            if let old = m.devices[device]?.fsid, old != fsid, m.owners[old] == device { m.owners[old] = nil }
            let wanted = events | (renames ? (m.pairsRenames ? CFAN_RENAME : CFAN_MOVED_FROM | CFAN_MOVED_TO) : 0)
            do throws(Errno) {
                _ = try Syscall.retrying { cfan_mark_filesystem(fd.rawValue, directory.rawValue, wanted) }
                m.devices[device] = (wanted, fsid)
            } catch {
                // Before Linux 5.17 there is no FAN_RENAME: renames then come as a deletion and a creation.
                guard renames, error == .invalidArgument, m.pairsRenames, m.devices.isEmpty else {
                    m.refused[device] = error
                    return .failure(error)
                }
                m.pairsRenames = false
                let halves = events | CFAN_MOVED_FROM | CFAN_MOVED_TO
                do throws(Errno) {
                    _ = try Syscall.retrying { cfan_mark_filesystem(fd.rawValue, directory.rawValue, halves) }
                } catch {
                    m.refused[device] = error
                    return .failure(error)
                }
                m.devices[device] = (halves, fsid)
            }
            m.owners[fsid] = device
            return .success(fsid)
        }
        return try result.get()
    }

    /// Why fanotify cannot follow a filesystem that refused a mark with `error`, for messages.
    static func explain(_ error: Errno) -> String {
        switch error {
        case .notPermitted:
            "fanotify's filesystem marks need CAP_SYS_ADMIN (run as root, or grant it with AmbientCapabilities=)"
        case .improperLink:
            "its filesystem cannot be marked on its own (a btrfs subvolume, or a filesystem sharing its fsid with another: EXDEV)"
        case .operationNotSupportedByDevice, .notSupported: "its filesystem has no file handles or no fsid (\(error))"
        default: "fanotify cannot mark its filesystem: \(error)"
        }
    }

    /// Filesystems marked now.
    var markCount: Int { marks.withLock { $0.devices.count } }

    /// Reads queued events into `buffer`; 0 when nothing is queued.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try Syscall.read(fd, into: buffer)
    }

    /// The key fanotify reports the open directory `directory` by, on the filesystem of fsid `fsid`.
    static func key(of directory: FileDescriptor, fsid: UInt64) throws(Errno) -> DirectoryKey {
        try withUnsafeTemporaryAllocation(byteCount: Int(CFAN_KEY_MAX), alignment: 8) { b throws(Errno) in
            let n = try Syscall.retrying {
                cfan_directory_key(directory.rawValue, fsid, b.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            return DirectoryKey(UnsafeRawBufferPointer(rebasing: b[..<Int(n)]))
        }
    }

    /// Why a group cannot be had here, or nil when it can (tried once per process: a group is cheap to make).
    /// The group asks for an unbounded queue, which needs `CAP_SYS_ADMIN` in the initial user namespace: an
    /// unprivileged process — or one privileged only in a user namespace of its own, which may make a group but
    /// not mark a filesystem it does not own — is told so here, before any directory is tried.
    static let unavailability: String? = {
        do throws(Errno) {
            _ = try FanotifyGroup(events: mainEvents)
            return nil
        } catch {
            switch error {
            case .notPermitted: return explain(error)
            case .invalidArgument:
                return "this kernel's fanotify cannot report names (FAN_REPORT_DFID_NAME needs Linux 5.9)"
            case .noFunction: return "this kernel has no fanotify (CONFIG_FANOTIFY)"
            default: return "fanotify_init failed: \(error)"
            }
        }
    }()
}
