import CacheWardenLedger
import Glibc

/// How fanotify names a directory in its events: the filesystem's fsid, the file handle's type and its bytes
/// (`cfan_directory_key` computes the same for a directory the walker opened). Held inline up to 40 bytes — ext4,
/// XFS and tmpfs keys are 20–28 — so that looking up the directory of each event allocates nothing; a longer key
/// (some btrfs and network filesystems) is kept in an array. Its hash is computed once, where it is made: a
/// walker's key on the walker's thread, not on the engine's queue.
struct DirectoryKey: Equatable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    private var count: Int
    private var long: [UInt8]?
    /// The seeded hash of the key's bytes (`NameArena.hash(_:)`: the same hasher the ledger's tables use).
    let hash: Int

    init(_ bytes: UnsafeRawBufferPointer) {
        count = bytes.count
        hash = NameArena.hash(bytes)
        if bytes.count > 40 {
            long = Array(bytes)
        } else {
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
        }
    }

    /// Whether this is the key of `bytes`, compared byte for byte (no hash computed).
    func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == count else { return false }
        if let long { return long.elementsEqual(bytes) }
        return withUnsafeBytes(of: words) { memcmp($0.baseAddress!, bytes.baseAddress!, count) == 0 }
    }

    static func == (a: DirectoryKey, b: DirectoryKey) -> Bool {
        a.hash == b.hash && a.count == b.count && a.words.0 == b.words.0 && a.words.1 == b.words.1
            && a.words.2 == b.words.2 && a.words.3 == b.words.3 && a.words.4 == b.words.4 && a.long == b.long
    }
}
