import CWardenShims
import Glibc

/// One entry of a directory as `getdents64(2)` lists it (`struct linux_dirent64`): its name, the type the
/// directory records for it, and the inode number it names. Read from the kernel's buffer by
/// `Syscall.readDirectory`; the name is valid only during the call that hands the entry over.
///
/// `ino` is the number the directory holds: for a mount point, the covered directory's, not the mounted root's;
/// on overlayfs it may differ from what `stat` reports. `type` is `DT_UNKNOWN` where the filesystem does not
/// record types (some network and older filesystems): callers then `lstat` the name.
package struct DirectoryEntry {
    /// Bytes of records read per `getdents64` call (glibc's `readdir` reads the same).
    static let readSize = 32 * 1024

    package var name: UnsafePointer<CChar>
    package var type: UInt8
    package var ino: UInt64

    /// The record at `offset` of the `count` bytes read into `buffer`, decoded by `cwsys_dirent_next` (the record's
    /// layout is the C shim's to know), with the offset of the record after it in `next`; nil when no complete
    /// record starts there (a short read).
    init?(_ buffer: UnsafeRawPointer, count: Int, at offset: Int, next: inout Int) {
        var ino: UInt64 = 0
        var type: UInt8 = 0
        var name: UnsafePointer<CChar>?
        next = cwsys_dirent_next(buffer, count, offset, &ino, &type, &name)
        guard next >= 0, let name else { return nil }
        self.name = name
        self.type = type
        self.ino = ino
    }

    var isDotOrDotDot: Bool { name[0] == 46 && (name[1] == 0 || (name[1] == 46 && name[2] == 0)) }
    /// The directory says it is a directory, a regular file, or does not say (`DT_UNKNOWN`).
    package var isDirectory: Bool { type == UInt8(DT_DIR) }
    package var isRegularFile: Bool { type == UInt8(DT_REG) }
    package var typeUnknown: Bool { type == UInt8(DT_UNKNOWN) }
}
