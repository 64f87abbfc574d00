import CacheWarden

/// One JSON value of the control protocol. Requests are read into it (`JSONReader`) and checked field by field, so
/// a bad request gets a reply that names the field; clients read replies into it, and the CLI prints them with
/// sorted keys. Written with the event lines' string and integer writer (`JSONLineBuilder`).
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number without fraction that fits an `Int64`.
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses one JSON document (a request or reply line without its newline).
    package init(parsing bytes: [UInt8]) throws {
        self = try JSONReader.parse(bytes)
    }

    /// The value as JSON on one line (no newline); `sortedKeys` orders every object's keys. A number JSON cannot
    /// hold (infinite, NaN) is written as null.
    package func jsonBytes(sortedKeys: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        write(to: &out, sortedKeys: sortedKeys)
        return out
    }

    private func write(to out: inout [UInt8], sortedKeys: Bool) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let i): JSONLineBuilder.appendInteger(i, to: &out)
        // The shortest text that reads back as the same Double (`1e-05`, `0.1`, `2.0`): valid JSON when finite.
        case .number(let d): out += Array((d.isFinite ? String(d) : "null").utf8)
        case .string(let s): JSONLineBuilder.appendQuoted(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out, sortedKeys: sortedKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            let keys = sortedKeys ? fields.keys.sorted() : Array(fields.keys)
            for (i, key) in keys.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONLineBuilder.appendQuoted(key, to: &out)
                out.append(UInt8(ascii: ":"))
                fields[key]!.write(to: &out, sortedKeys: sortedKeys)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The value as JSON text with sorted keys (for messages and printing).
    package var jsonText: String { String(decoding: jsonBytes(sortedKeys: true), as: UTF8.self) }

    // MARK: Reading

    package subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { o[key] } else { nil }
    }

    package var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    package var string: String? { if case .string(let s) = self { s } else { nil } }
    /// An integer, or a number without fraction that fits an `Int64`.
    package var integer: Int64? {
        switch self {
        case .integer(let i): i
        case .number(let d): Int64(exactly: d)
        default: nil
        }
    }
    package var number: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .number(let d): d
        default: nil
        }
    }
    package var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    package var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// An array of strings only (nil when any element is something else).
    package var strings: [String]? {
        guard let a = array else { return nil }
        let s = a.compactMap(\.string)
        return s.count == a.count ? s : nil
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    package init(nilLiteral: ()) { self = .null }
}
