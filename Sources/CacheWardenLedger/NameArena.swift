/// Every file and directory name of the ledger, back to back in one byte buffer. A name is referred to by its
/// offset and length (a `NameRef`) instead of owning an `[UInt8]` of its own: one allocation for a million names
/// rather than a million allocations of 32+ bytes each, which is most of what brings the ledger under 64 bytes
/// a file. Names are raw bytes (not necessarily UTF-8) of at most 255 bytes (`NAME_MAX`).
///
/// Released names leave holes; `SizeLedger` compacts the arena when the holes outgrow the live names.
package struct NameArena {
    private(set) var bytes: [UInt8] = []
    /// Bytes of released names still in `bytes`.
    private(set) var wasted = 0

    var liveBytes: Int { bytes.count - wasted }

    /// Appends `name` and returns where it starts.
    mutating func store(_ name: UnsafeRawBufferPointer) -> NameRef {
        precondition(name.count <= Int(UInt8.max), "a file name is at most NAME_MAX (255) bytes")
        let offset = bytes.count
        bytes.append(contentsOf: name)
        return NameRef(offset: UInt32(truncatingIfNeeded: offset), length: UInt8(name.count))
    }

    /// Marks a stored name as no longer used.
    mutating func release(_ ref: NameRef) { wasted += Int(ref.length) }

    /// Whether the stored name equals `name`.
    func equals(_ ref: NameRef, _ name: UnsafeRawBufferPointer) -> Bool {
        guard Int(ref.length) == name.count else { return false }
        if name.isEmpty { return true }
        return bytes.withUnsafeBytes { all in
            memcmp(all.baseAddress! + Int(ref.offset), name.baseAddress!, name.count) == 0
        }
    }

    /// The hash `NameTable` files a stored name under (the same as `NameArena.hash(_:)` of its bytes).
    func hash(_ ref: NameRef) -> Int {
        bytes.withUnsafeBytes { all in
            Self.hash(UnsafeRawBufferPointer(rebasing: all[Int(ref.offset)..<Int(ref.offset) + Int(ref.length)]))
        }
    }

    /// Hashes name bytes with the standard library's seeded hasher (SipHash): names come from whoever writes
    /// into the cache, and a per-process seed keeps crafted names from colliding on purpose.
    package static func hash(_ name: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: name)
        return hasher.finalize()
    }

    /// Appends the stored name to `out`.
    func append(_ ref: NameRef, to out: inout [UInt8]) {
        out.append(contentsOf: bytes[Int(ref.offset)..<Int(ref.offset) + Int(ref.length)])
    }

    /// A copy of the stored name.
    func copy(_ ref: NameRef) -> [UInt8] { Array(bytes[Int(ref.offset)..<Int(ref.offset) + Int(ref.length)]) }

    /// Calls `body` with the stored name's bytes (valid only inside `body`).
    func withName<R>(_ ref: NameRef, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[Int(ref.offset)..<Int(ref.offset) + Int(ref.length)]))
        }
    }
}

/// Where a name lives in the `NameArena`.
package struct NameRef: Equatable, Sendable {
    package internal(set) var offset: UInt32
    package internal(set) var length: UInt8
    package static let empty = NameRef(offset: 0, length: 0)
}

import Glibc
