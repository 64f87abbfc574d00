import Foundation

/// A JSON document with its keys in the order they were given (for a summary that reads like the table).
indirect enum JSONValue {
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    case double(Double)
    case int(Int64)
    case bool(Bool)
    case null

    /// A number, or `null` when missing or not finite.
    static func number(_ x: Double?) -> JSONValue {
        guard let x, x.isFinite else { return .null }
        return .double(x)
    }

    /// An integer, or `null` when missing.
    static func integer<I: BinaryInteger>(_ x: I?) -> JSONValue { x.map { .int(Int64($0)) } ?? .null }

    /// A string, or `null` when missing.
    static func text(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }

    /// A boolean, or `null` when missing.
    static func flag(_ b: Bool?) -> JSONValue { b.map { .bool($0) } ?? .null }

    /// Pretty-printed with two-space indentation; arrays of scalars stay on one line.
    func rendered(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .object(let members):
            if members.isEmpty { return "{}" }
            let body = members.map { "\(inner)\(Self.quote($0.0)): \($0.1.rendered(indent: indent + 1))" }
            return "{\n" + body.joined(separator: ",\n") + "\n\(pad)}"
        case .array(let items):
            if items.allSatisfy({ $0.isScalar }) { return "[" + items.map { $0.rendered() }.joined(separator: ", ") + "]" }
            return "[\n" + items.map { inner + $0.rendered(indent: indent + 1) }.joined(separator: ",\n") + "\n\(pad)]"
        case .string(let s): return Self.quote(s)
        case .double(let d):
            if d == d.rounded() && abs(d) < 1e15 { return String(Int64(d)) }
            return String(format: "%.6g", d)
        case .int(let i): return String(i)
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .object, .array: return false
        default: return true
        }
    }

    private static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
