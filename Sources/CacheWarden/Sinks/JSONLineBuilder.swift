import Glibc

/// Builds one JSON object as UTF-8 bytes, ending in a newline.
///
/// Written by hand rather than with Foundation's `JSONEncoder` because the sink runs on the event path: this
/// appends into one reusable byte buffer with no intermediate `Codable` containers or dictionaries, keeps the
/// contract's field order (`event`, `time` first, which makes lines easy to scan), and encodes the cases the
/// contract needs exactly: strings are escaped per RFC 8259 (`"`, `\`, and every control character below 0x20
/// as `\n`, `\t`, `\r`, `\b`, `\f` or `\u00XX`). Strings are Swift `String`s and so always valid UTF-8: bytes
/// of a file name that were not UTF-8 were already replaced by U+FFFD when the name became a `String`.
/// Tests parse its output with Python's `json` module and with `jq`.
package struct JSONLineBuilder: EventFieldWriter {
    private(set) var bytes: [UInt8] = []
    private var first = true

    package init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    /// A nested object, to be added to another builder with `addRaw`.
    package init(object: Bool) { self.init(capacity: 64) }

    /// Closes a nested object (no newline).
    package mutating func finishObject() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// Adds a value already encoded as JSON (a nested object).
    package mutating func addRaw(_ name: StaticString, _ json: [UInt8]) {
        key(name)
        bytes.append(contentsOf: json)
    }

    /// Adds an array of nested objects, each filled by `fill`.
    package mutating func addObjects<T>(_ name: StaticString, _ items: [T], _ fill: (inout JSONLineBuilder, T) -> Void)
    {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            var inner = JSONLineBuilder(object: true)
            fill(&inner, item)
            bytes.append(contentsOf: inner.finishObject())
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func key(_ name: StaticString) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    package mutating func add(_ name: StaticString, _ value: String) {
        key(name)
        Self.appendQuoted(value, to: &bytes)
    }

    /// Adds a time as an RFC 3339 string (see `RFC3339`).
    package mutating func addTime(_ name: StaticString, secondsSince1970 t: Double) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        RFC3339.append(secondsSince1970: t, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func add(_ name: StaticString, _ value: Int64) {
        key(name)
        Self.appendInteger(value, to: &bytes)
    }

    package mutating func add(_ name: StaticString, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: value ? Array("true".utf8) : Array("false".utf8))
    }

    /// A finite number with up to 3 decimals (`null` when not finite).
    package mutating func add(_ name: StaticString, _ value: Double) {
        key(name)
        Self.appendNumber(value, to: &bytes)
    }

    /// A nested object whose fields `fill` writes.
    package mutating func addObject(_ name: StaticString, _ fill: (inout JSONLineBuilder) -> Void) {
        var inner = JSONLineBuilder(object: true)
        fill(&inner)
        addRaw(name, inner.finishObject())
    }

    /// Appends a number as JSON writes it: up to 3 decimals, no trailing zeros (`null` when not finite).
    package static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        guard value.isFinite else { bytes.append(contentsOf: Array("null".utf8)); return }
        let scaled = (value * 1000).rounded()
        if abs(scaled) < 9e15 {
            let milli = Int64(scaled)
            if milli < 0 { bytes.append(UInt8(ascii: "-")) }
            let m = milli.magnitude
            appendInteger(Int64(m / 1000), to: &bytes)
            let frac = m % 1000
            if frac != 0 {
                bytes.append(UInt8(ascii: "."))
                var digits = [UInt8(48 + frac / 100), UInt8(48 + (frac / 10) % 10), UInt8(48 + frac % 10)]
                while digits.last == UInt8(ascii: "0") { digits.removeLast() }
                bytes.append(contentsOf: digits)
            }
        } else {
            bytes.append(contentsOf: Array(String(value).utf8))
        }
    }

    package mutating func add(_ name: StaticString, _ values: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, v) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            Self.appendQuoted(v, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Closes the object and the line.
    package mutating func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Appends the decimal digits of `value`.
    package static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
        if value == 0 { bytes.append(UInt8(ascii: "0")); return }
        var v = value.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while v > 0 {
                buf[count] = UInt8(48 + v % 10)
                v /= 10
                count += 1
            }
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        withUnsafeBytes(of: &digits) { buf in
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(buf[i]) }
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `value` as a quoted JSON string.
    package static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(byte)
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            case 0x00..<0x20:
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                ])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// RFC 3339 UTC timestamps with milliseconds (`2026-11-22T00:34:47.123Z`), formatted with `gmtime_r`
/// (Foundation's `ISO8601DateFormatter` is far slower and not needed for a fixed format).
package enum RFC3339 {
    package static func format(secondsSince1970 t: Double) -> String {
        var bytes: [UInt8] = []
        append(secondsSince1970: t, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds truncated). Digits are written into the buffer
    /// directly: every event line carries one, and building it from padded `String`s was a quarter of the JSON
    /// sink's time under a fast writer. Tested against Foundation's `ISO8601DateFormatter`.
    package static func append(secondsSince1970 t: Double, to bytes: inout [UInt8]) {
        var seconds = time_t(t.rounded(.down))
        var millis = Int(((t - Double(seconds)) * 1000).rounded(.down))
        if millis >= 1000 { seconds += 1; millis -= 1000 }
        var tm = tm()
        gmtime_r(&seconds, &tm)
        func digits(_ v: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var v = v
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(v / divisor % 10))
                v %= divisor
                divisor /= 10
            }
        }
        digits(Int(tm.tm_year) + 1900, 4); bytes.append(UInt8(ascii: "-"))
        digits(Int(tm.tm_mon) + 1, 2); bytes.append(UInt8(ascii: "-"))
        digits(Int(tm.tm_mday), 2); bytes.append(UInt8(ascii: "T"))
        digits(Int(tm.tm_hour), 2); bytes.append(UInt8(ascii: ":"))
        digits(Int(tm.tm_min), 2); bytes.append(UInt8(ascii: ":"))
        digits(Int(tm.tm_sec), 2); bytes.append(UInt8(ascii: "."))
        digits(millis, 3); bytes.append(UInt8(ascii: "Z"))
    }
}
