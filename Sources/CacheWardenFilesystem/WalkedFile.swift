/// A regular file a walk found: its name (in the directory's `names` buffer) and what its stat counts.
package struct WalkedFile: Sendable {
    package var nameStart: UInt32
    package var nameLength: UInt8
    package var status: CountedStat
}
