import CacheWardenFilesystem
import Glibc
import SystemPackage

/// A folder held locks are in (or a pattern was matched in), looked at before the files in it by each re-check
/// (`HeldClientLocks.stillHeld()`): its path from the root must still name the folder held (device and inode;
/// `lstat` of the path against `fstat` of the descriptor). A `.locks/<repo>` folder renamed away and made anew holds
/// the locks the next client takes, and the held descriptor would never show them. The files in it are then looked
/// at, and each pattern folder listed, at every re-check: nothing about a folder (its times included) is taken to
/// mean that no name came or went.
struct LockFolderWatch {
    let folder: LockFolder

    init(_ folder: LockFolder) { self.folder = folder }

    /// Whether the folder's path still names the folder held.
    func stillThere() -> Bool {
        guard let held = try? Syscall.fstat(folder.fd),
            let there =
                (try? folder.cPath.withUnsafeBufferPointer { p throws(Errno) in
                    try Syscall.lstat(at: Syscall.currentDirectory, p.baseAddress!)
                })
        else { return false }
        return LockFileRegistry.FileIdentity(there) == LockFileRegistry.FileIdentity(held)
    }
}
