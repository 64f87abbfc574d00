import SystemPackage

/// A directory's number within one walk (0 for the top, -1 for the top's parent): not a descriptor.
package typealias WalkID = Int32

/// One directory a walk read, reported after its entries were read; parents are always reported before children.
package struct WalkedDirectory<Watch: Sendable>: Sendable {
    /// Walk-local id (0 for the top); `parent` is the id of the directory it was found in (-1 for the top).
    package var id: WalkID
    package var parent: WalkID
    package var name: [UInt8]
    package var ino: UInt64
    /// The directory's own counted bytes.
    package var bytes: Int64 = 0
    /// The directory could not be opened or read (its entries are missing).
    package var readError: Errno?
    /// The names of `files`, back to back (one allocation per directory, not per file).
    package var names: [UInt8] = []
    package var files: [WalkedFile] = []
    /// Files whose filesystem has no birth time (`order = btime` fell back to mtime).
    package var noBirthTime = false
    /// What the walk's `watch` answered for it, unread by the walker (nil when the walk does not watch). Last, so
    /// that the other fields keep offsets the compiler knows in the walker's generic code.
    package var watch: Watch?

    package func withName<R>(_ file: WalkedFile, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        names.withUnsafeBytes { all in
            body(
                UnsafeRawBufferPointer(rebasing: all[Int(file.nameStart)..<Int(file.nameStart) + Int(file.nameLength)]))
        }
    }
}
