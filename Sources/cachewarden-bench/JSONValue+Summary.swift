import CacheWardenService
import Foundation

/// The benchmark's JSON summary is the control protocol's `JSONValue`, built with helpers that take what a
/// section may lack (nil is `null`) and printed indented for people.
extension JSONValue {
    /// A number, or `null` when missing or not finite.
    static func number(_ x: Double?) -> JSONValue {
        guard let x, x.isFinite else { return .null }
        return .number(x)
    }

    /// An integer, or `null` when missing.
    static func integer<I: BinaryInteger>(_ x: I?) -> JSONValue { x.map { .integer(Int64($0)) } ?? .null }

    /// A string, or `null` when missing.
    static func text(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }

    /// A boolean, or `null` when missing.
    static func flag(_ b: Bool?) -> JSONValue { b.map { .bool($0) } ?? .null }

    /// An object from its members as a section lists them (a later duplicate key wins).
    static func object(_ members: [(String, JSONValue)]) -> JSONValue {
        .object(Dictionary(members, uniquingKeysWith: { _, last in last }))
    }

    /// Indented by two spaces, keys sorted; arrays of scalars stay on one line. Whole numbers print without a
    /// fraction, others with six significant digits.
    func rendered(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .object(let members):
            if members.isEmpty { return "{}" }
            let body = members.keys.sorted().map { key in
                "\(inner)\(JSONValue.string(key).jsonText): \(members[key]!.rendered(indent: indent + 1))"
            }
            return "{\n" + body.joined(separator: ",\n") + "\n\(pad)}"
        case .array(let items):
            if items.allSatisfy(\.isScalar) { return "[" + items.map { $0.rendered() }.joined(separator: ", ") + "]" }
            return "[\n" + items.map { inner + $0.rendered(indent: indent + 1) }.joined(separator: ",\n") + "\n\(pad)]"
        case .number(let d):
            if !d.isFinite { return "null" }
            if d == d.rounded() && abs(d) < 1e15 { return String(Int64(d)) }
            return String(format: "%.6g", d)
        case .null, .bool, .integer, .string: return jsonText
        }
    }

    private var isScalar: Bool {
        switch self {
        case .object, .array: false
        default: true
        }
    }
}
