import CacheWarden
import FoundationEssentials

/// One JSON value of the control protocol, read and written with `Codable` (FoundationEssentials' `JSONDecoder`
/// and `JSONEncoder`). Requests are read into it and checked field by field, so a bad request gets a reply that
/// names the field; clients read replies into it, and the CLI prints them with sorted keys. (Not
/// `JSONSerialization`: it is Foundation's, not FoundationEssentials', and would bring ICU's data into the
/// static binary with a second JSON writer. The daemon's own lines are written by `JSONLineBuilder`.)
public enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    /// A number without fraction that fits an `Int64`.
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses one JSON document (a request or reply line without its newline).
    public init(parsing bytes: [UInt8]) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .integer(i) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .integer(let i): try c.encode(i)
        case .number(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// The value as JSON on one line (no newline); `sortedKeys` orders every object's keys.
    public func jsonBytes(sortedKeys: Bool = false) -> [UInt8] {
        let encoder = JSONEncoder()
        if sortedKeys { encoder.outputFormatting = [.sortedKeys] }
        // Encoding cannot fail once non-finite numbers (which JSON cannot hold) are null.
        return (try? Array(encoder.encode(self.finite))) ?? Array("null".utf8)
    }

    /// The value as JSON text with sorted keys (for messages and printing).
    public var jsonText: String { String(decoding: jsonBytes(sortedKeys: true), as: UTF8.self) }

    /// Non-finite numbers (which JSON cannot hold) as null, at any depth.
    private var finite: JSONValue {
        switch self {
        case .number(let d) where !d.isFinite: .null
        case .array(let a): .array(a.map(\.finite))
        case .object(let o): .object(o.mapValues(\.finite))
        default: self
        }
    }

    // MARK: Reading

    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { o[key] } else { nil }
    }

    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    /// An integer, or a number without fraction that fits an `Int64`.
    public var integer: Int64? {
        switch self {
        case .integer(let i): i
        case .number(let d): Int64(exactly: d)
        default: nil
        }
    }
    public var number: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .number(let d): d
        default: nil
        }
    }
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// An array of strings only (nil when any element is something else).
    public var strings: [String]? {
        guard let a = array else { return nil }
        let s = a.compactMap(\.string)
        return s.count == a.count ? s : nil
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}
