/// Reads one JSON document (RFC 8259) into a `JSONValue`: what the control socket's requests and replies are.
///
/// Written here rather than with FoundationEssentials' `JSONDecoder`, which the ecosystem would suggest: the
/// decoder keeps much of FoundationEssentials (dates, calendars, URL, property lists) in the static binary,
/// about as much again as the rest of it, for lines of a few hundred bytes. It is strict where the decoder is: no
/// trailing commas, comments, single quotes, leading zeros, unescaped control characters, invalid UTF-8 or lone
/// surrogates; stricter in one more way: a key twice in one object is an error naming the key (a parser that kept the
/// first or the last value would let `{"command":"status","command":"clear"}` mean what the sender's parser did not).
/// It nests at most `maxDepth` levels, so a hostile request cannot exhaust the stack. `JSONReaderReferenceTests` checks
/// it against Python's `json` on generated and malformed documents.
struct JSONReader {
    static let maxDepth = 64

    private let bytes: [UInt8]
    private var at = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    struct Failure: Error, CustomStringConvertible {
        var offset: Int
        var problem: String
        var description: String { "invalid JSON at byte \(offset): \(problem)" }
    }

    /// The one value `bytes` hold, with nothing but whitespace around it.
    static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var reader = JSONReader(bytes)
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.at == bytes.count else { throw reader.failure("text after the value") }
        return value
    }

    private func failure(_ problem: String) -> Failure { Failure(offset: at, problem: problem) }

    /// Space, tab, line feed or carriage return: the whitespace JSON allows around its tokens.
    static func isWhitespace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

    private mutating func skipWhitespace() {
        while at < bytes.count, Self.isWhitespace(bytes[at]) { at += 1 }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        skipWhitespace()
        guard at < bytes.count else { throw failure("a value was expected") }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("a value was expected")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count,
            word.withUTF8Buffer({ w in (0..<count).allSatisfy { bytes[at + $0] == w[$0] } })
        else {
            throw failure("a value was expected")
        }
        at += count
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maxDepth else { throw failure("nested deeper than \(Self.maxDepth) levels") }
        at += 1
        var fields: [String: JSONValue] = [:]
        skipWhitespace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
        while true {
            skipWhitespace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else {
                throw failure("a key in quotes was expected")
            }
            let keyStart = at
            let key = try string()
            guard fields[key] == nil else {
                throw Failure(offset: keyStart, problem: "duplicate key \(key.debugDescription)")
            }
            skipWhitespace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw failure("`:` was expected") }
            at += 1
            fields[key] = try value(depth: depth)
            skipWhitespace()
            guard at < bytes.count else { throw failure("`,` or `}` was expected") }
            at += 1
            if bytes[at - 1] == UInt8(ascii: "}") { return .object(fields) }
            guard bytes[at - 1] == UInt8(ascii: ",") else { at -= 1; throw failure("`,` or `}` was expected") }
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maxDepth else { throw failure("nested deeper than \(Self.maxDepth) levels") }
        at += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
        while true {
            items.append(try value(depth: depth))
            skipWhitespace()
            guard at < bytes.count else { throw failure("`,` or `]` was expected") }
            at += 1
            if bytes[at - 1] == UInt8(ascii: "]") { return .array(items) }
            guard bytes[at - 1] == UInt8(ascii: ",") else { at -= 1; throw failure("`,` or `]` was expected") }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: an integer when it has no fraction or exponent and fits
    /// an `Int64`, else a `Double` (correctly rounded by the standard library's parser).
    private mutating func number() throws(Failure) -> JSONValue {
        let start = at
        if bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count, isDigit(bytes[at]) else { throw failure("a digit was expected") }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
            if at < bytes.count, isDigit(bytes[at]) { throw failure("a number cannot start with 0") }
        } else {
            skipDigits()
        }
        var integral = true
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            integral = false
            at += 1
            guard at < bytes.count, isDigit(bytes[at]) else { throw failure("a digit was expected after `.`") }
            skipDigits()
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            integral = false
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < bytes.count, isDigit(bytes[at]) else { throw failure("a digit was expected in the exponent") }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<at], as: UTF8.self)
        if integral, let i = Int64(text) { return .integer(i) }
        guard let d = Double(text), d.isFinite else {
            throw Failure(offset: start, problem: "the number \(text) is out of range")
        }
        return .number(d)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while at < bytes.count, isDigit(bytes[at]) { at += 1 }
    }

    /// A quoted string, its escapes decoded; the raw bytes must be valid UTF-8.
    private mutating func string() throws(Failure) -> String {
        at += 1
        var out: [UInt8] = []
        while true {
            guard at < bytes.count else { throw failure("the string is not closed") }
            let b = bytes[at]
            switch b {
            case UInt8(ascii: "\""):
                at += 1
                guard let s = String(validating: out, as: UTF8.self) else {
                    throw failure("the string is not valid UTF-8")
                }
                return s
            case UInt8(ascii: "\\"):
                at += 1
                try escape(into: &out)
            case 0..<0x20:
                throw failure("a control character must be escaped in a string")
            default:
                out.append(b)
                at += 1
            }
        }
    }

    /// One escape after its backslash: `\" \\ \/ \b \f \n \r \t` or `\uXXXX` (a surrogate pair as one character).
    private mutating func escape(into out: inout [UInt8]) throws(Failure) {
        guard at < bytes.count else { throw failure("the string is not closed") }
        let c = bytes[at]
        at += 1
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(c)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4())
            if (0xD800..<0xDC00).contains(scalar) {
                guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
                    throw failure("a high surrogate must be followed by a low one")
                }
                at += 2
                let low = UInt32(try hex4())
                guard (0xDC00..<0xE000).contains(low) else {
                    throw failure("a high surrogate must be followed by a low one")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw failure("a low surrogate without a high one")
            }
            guard let u = Unicode.Scalar(scalar) else { throw failure("not a Unicode scalar") }
            UTF8.encode(u) { out.append($0) }
        default:
            at -= 1
            throw failure("unknown escape")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt16 {
        guard at + 4 <= bytes.count else { throw failure("four hex digits were expected") }
        var v: UInt16 = 0
        for b in bytes[at..<at + 4] {
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw failure("four hex digits were expected")
            }
            v = v << 4 | UInt16(d)
        }
        at += 4
        return v
    }
}
