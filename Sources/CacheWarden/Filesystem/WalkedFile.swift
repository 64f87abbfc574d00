/// A regular file a walk found: its name (in the directory's `names` buffer) and what its stat counts.
struct WalkedFile: Sendable {
    var nameStart: UInt32
    var nameLength: UInt8
    var status: CountedStat
}
