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
    /// The record's length in the buffer (`d_reclen`).
    var recordLength: Int

    /// The record at `record`, of which `available` bytes were read; nil when it does not fit (a short read).
    init?(record: UnsafeMutableRawPointer, available: Int) {
        // d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), then d_name, NUL-terminated.
        guard available >= 20 else { return nil }
        recordLength = Int(record.loadUnaligned(fromByteOffset: 16, as: UInt16.self))
        guard recordLength >= 20, recordLength <= available else { return nil }
        ino = record.loadUnaligned(as: UInt64.self)
        type = record.load(fromByteOffset: 18, as: UInt8.self)
        name = UnsafePointer((record + 19).assumingMemoryBound(to: CChar.self))
    }

    var isDotOrDotDot: Bool { name[0] == 46 && (name[1] == 0 || (name[1] == 46 && name[2] == 0)) }
    /// The directory says it is a directory, a regular file, or does not say (`DT_UNKNOWN`).
    package var isDirectory: Bool { type == UInt8(DT_DIR) }
    package var isRegularFile: Bool { type == UInt8(DT_REG) }
    package var typeUnknown: Bool { type == UInt8(DT_UNKNOWN) }
}
