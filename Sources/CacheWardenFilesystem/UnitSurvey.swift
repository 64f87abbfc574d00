import Glibc
import SystemPackage

/// What a folder holds, read through descriptors only (each subfolder opened from its parent with `O_NOFOLLOW`
/// and `RESOLVE_NO_XDEV`, listed with `getdents64`): the inodes of its regular files, whether
/// it holds anything a unit cannot (a mount point, a socket, a FIFO, a device), and nothing else. A unit is deleted
/// whole only when it holds exactly the files that were counted: the survey is taken before a unit leaves its
/// client's view, and again in the trash before it is deleted (`SafeRemover.evictUnit`).
package struct UnitSurvey {
    /// The regular files' inode numbers (with `statting`, from their `lstat`; else the listing's).
    package private(set) var files: Set<UInt64> = []
    /// A mount point, a socket, a FIFO or a device inside, or a folder that could not be read or emptied.
    package private(set) var unexpected: String?
    /// A folder went while it was surveyed: the unit is changing (not a reason to keep it for good).
    package private(set) var vanished = false

    /// Surveys the folder open at `folder` (any descriptor of it). `statting`: `lstat` every entry; without, the
    /// listing's inode numbers and types are taken, and `lstat` only where the filesystem lists no type.
    package init(_ folder: FileDescriptor, statting: Bool) {
        var stack: [OwnedDescriptor] = []
        do throws(Errno) { stack.append(try Syscall.reopenForListing(folder)) } catch {
            note(error, "cannot read it")
            return
        }
        let buffer = DirectoryBuffer()
        while let dir = stack.popLast(), unexpected == nil {
            do throws(Errno) {
                try Syscall.readDirectory(dir.fd, buffer: buffer) { entry in
                    note(entry, in: dir.fd, statting: statting, into: &stack)
                }
            } catch {
                note(error, "cannot read a folder in it")
            }
        }
    }

    private mutating func note(
        _ entry: DirectoryEntry, in dir: FileDescriptor, statting: Bool, into stack: inout [OwnedDescriptor]
    ) {
        var type = entry.type
        var st: stat?
        if statting || entry.typeUnknown {
            guard let found = try? Syscall.lstat(at: dir, entry.name) else { return } // gone meanwhile
            st = found
            type = Self.direntType(found.st_mode)
        }
        switch Int(type) {
        case DT_REG: files.insert(st.map { UInt64($0.st_ino) } ?? entry.ino)
        case DT_LNK: break
        case DT_DIR:
            guard Self.canEmpty(entry.name, in: dir) else {
                unexpected = "it holds a folder CacheWarden can neither write nor make writable"
                return
            }
            do throws(Errno) { stack.append(try Syscall.openDirectoryNotCrossing(at: dir, entry.name)) } catch {
                if error == .improperLink {
                    unexpected = "it holds a mount point"
                } else {
                    note(error, "cannot open a folder in it")
                }
            }
        default: unexpected = "it holds a socket, a FIFO or a device"
        }
    }

    private mutating func note(_ error: Errno, _ what: String) {
        if error == .noSuchFileOrDirectory { vanished = true } else { unexpected = "\(what) (\(error))" }
    }

    /// Whether the trash can empty folder `name` of `dir` once the unit is there: this process may change the names
    /// in it, or the folder is this user's own (`TreeRemover` sets a read-only one's write bit back). A unit whose
    /// files could not be deleted would be reported evicted while its bytes stay in the trash. Only a plain
    /// `EACCES` says no: root passes at once (as before), and any other answer (a read-only filesystem, a seccomp
    /// profile refusing `faccessat2` with `EPERM`) leaves it to the rename and the deletions, which report theirs.
    private static func canEmpty(_ name: UnsafePointer<CChar>, in dir: FileDescriptor) -> Bool {
        guard geteuid() != 0, Syscall.namesChangeRefused(at: dir, name) == .permissionDenied else { return true }
        return (try? Syscall.lstat(at: dir, name))?.st_uid == geteuid()
    }

    private static func direntType(_ mode: mode_t) -> UInt8 {
        switch mode & S_IFMT {
        case S_IFREG: UInt8(DT_REG)
        case S_IFDIR: UInt8(DT_DIR)
        case S_IFLNK: UInt8(DT_LNK)
        default: UInt8(DT_UNKNOWN)
        }
    }
}
