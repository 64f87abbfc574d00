/// How fanotify names a directory in its events: the filesystem's fsid, the file handle's type and its bytes
/// (`cfan_directory_key` computes the same for a directory the walker opened). Held inline up to 40 bytes — ext4,
/// XFS and tmpfs keys are 20–28 — so that looking up the directory of each event allocates nothing; a longer key
/// (some btrfs and network filesystems) is kept in an array.
struct DirectoryKey: Hashable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    private var count: Int
    private var long: [UInt8]?

    init(_ bytes: UnsafeRawBufferPointer) {
        count = bytes.count
        if bytes.count > 40 {
            long = Array(bytes)
        } else {
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
        }
    }

    static func == (a: DirectoryKey, b: DirectoryKey) -> Bool {
        a.count == b.count && a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2
            && a.words.3 == b.words.3 && a.words.4 == b.words.4 && a.long == b.long
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        if let long { hasher.combine(long); return }
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
        hasher.combine(words.4)
    }

    /// The filesystem id (the key's first 8 bytes).
    var filesystemID: UInt64 { long.map { $0.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } } ?? words.0 }
}
