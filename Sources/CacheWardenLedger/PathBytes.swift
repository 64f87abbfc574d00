/// Paths as raw bytes (Linux names need not be UTF-8): the one join, and the one way a path becomes a `String`
/// for events and messages.
package enum PathBytes {
    package static let separator = UInt8(ascii: "/")

    /// `directory/name`; either side may be empty (a root's own entries have the directory "").
    package static func join(_ directory: [UInt8], _ name: [UInt8]) -> [UInt8] {
        if directory.isEmpty { return name }
        if name.isEmpty { return directory }
        var path = directory
        if path.last != separator { path.append(separator) }
        path.append(contentsOf: name)
        return path
    }

    /// The bytes as a `String` for JSON and messages: invalid UTF-8 becomes U+FFFD (the file itself is always
    /// handled by its real bytes).
    package static func display(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
