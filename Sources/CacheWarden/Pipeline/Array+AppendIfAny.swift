extension Array {
    /// Appends `other` unless it is empty. The ledger answers nearly every change with no names to stat again, and
    /// appending an empty array to an empty one still replaces this one's buffer: once per file of a scan.
    mutating func appendIfAny(_ other: [Element]) {
        if !other.isEmpty { self += other }
    }
}
