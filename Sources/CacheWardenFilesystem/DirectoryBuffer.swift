/// The buffer `Syscall.readDirectory` reads entries into (`DirectoryEntry.readSize` bytes). A walker thread keeps
/// one for all the directories it reads rather than allocating 32 KiB per directory. Not for sharing between
/// threads.
package final class DirectoryBuffer {
    let bytes: UnsafeMutableRawBufferPointer

    package init() { bytes = .allocate(byteCount: DirectoryEntry.readSize, alignment: 8) }

    deinit { bytes.deallocate() }
}
