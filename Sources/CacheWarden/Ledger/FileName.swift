/// A directory entry name as raw bytes (not necessarily UTF-8), as a dictionary key that hashes its bytes in one
/// call: `Array<UInt8>`'s own `Hashable` feeds the hasher one byte at a time, which was the largest user-space cost
/// of indexing a big tree.
struct FileName: Hashable {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (a: FileName, b: FileName) -> Bool { a.bytes == b.bytes }
}

extension Dictionary where Key == FileName {
    /// Looks up or sets an entry by its raw name bytes.
    subscript(_ name: [UInt8]) -> Value? {
        get { self[FileName(name)] }
        set { self[FileName(name)] = newValue }
    }
}
