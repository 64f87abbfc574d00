import Foundation
import Testing
@testable import CacheWardenService

/// `JSONReader` (the control protocol's hand-written reader) against Python's `json` module, strict (no NaN or
/// Infinity, no control characters in strings, nothing after the value): the same value for generated documents
/// (escapes, surrogate pairs, big and small numbers, nesting, whitespace), and a refusal wherever Python refuses.
/// Three chosen differences: a lone surrogate escape, a number beyond a Double's range and a key twice in one
/// object are refused (a Swift string cannot hold the first; Python reads the second as infinity, and keeps the
/// last value of a repeated key, which would let a request mean what its sender's parser did not).
/// FoundationEssentials' `JSONDecoder`, which the protocol used before, is not the reference: it accepts trailing
/// commas and text after the value.
@Suite struct JSONReaderReferenceTests {
    /// Python's reading of each document: its value re-written as canonical JSON (sorted keys, ASCII escapes,
    /// shortest float text), or nil where it refuses the document.
    static func python(_ documents: [[UInt8]]) throws -> [String?] {
        let script = """
            import json, sys
            def refuse(name): raise ValueError(name)
            for line in sys.stdin.read().split("\\n")[:-1]:
                try:
                    value = json.loads(bytes.fromhex(line).decode("utf-8"), parse_constant=refuse)
                    print(json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False))
                except ValueError:
                    print("REFUSED")
            """
        let input = documents.map {
            $0.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
                + "\n"
        }.joined()
        let r = try runProcess(try #require(which("python3")), ["-c", script], stdin: input)
        try #require(r.status == 0, "\(r.err)")
        let lines = r.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        try #require(lines.count == documents.count)
        return lines.map { $0 == "REFUSED" ? nil : $0 }
    }

    /// Numbers by value: an integral double that fits an Int64 is that integer (Python writes `1e2` back as
    /// `100.0`, the reader reads `1e2` as the double it is written as; their `integer` is the same).
    static func normalized(_ v: JSONValue) -> JSONValue {
        switch v {
        case .number(let d): Int64(exactly: d).map(JSONValue.integer) ?? v
        case .array(let a): .array(a.map(normalized))
        case .object(let o): .object(o.mapValues(normalized))
        default: v
        }
    }

    struct Generator {
        var rng = SystemRandomNumberGenerator()

        mutating func space() -> String { ["", " ", "\n", "\t ", "\r\n"].randomElement(using: &rng)! }

        mutating func string() -> String {
            let pieces = [
                "a", "é", "😀", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041", "\\u00e9",
                "\\ud83d\\ude00", "\\u2028", "\\u0000", "space ", "中文", "\\uFFFF",
            ]
            return "\""
                + (0..<Int.random(in: 0...5, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
                + "\""
        }

        mutating func number() -> String {
            [
                "0", "-0", "7", "-12", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                "123456789012345678901234567890", "1.5", "-0.000001", "3.141592653589793", "1e3", "1E-7", "2.5e+10",
                "1.0", "1e308", "4.9e-324", "0.1", "100",
            ].randomElement(using: &rng)!
        }

        mutating func value(_ depth: Int) -> String {
            let kind = depth > 4 ? Int.random(in: 0...4, using: &rng) : Int.random(in: 0...6, using: &rng)
            switch kind {
            case 0: return ["true", "false", "null"].randomElement(using: &rng)!
            case 1, 2: return number()
            case 3, 4: return string()
            case 5:
                return "["
                    + (0..<Int.random(in: 0...4, using: &rng)).map { _ in space() + value(depth + 1) + space() }.joined(
                        separator: ",") + "]"
            default:
                // Keys distinct once decoded (`"😀"` and `"\ud83d\ude00"` are one key): a key twice is refused, one
                // of the chosen differences below.
                var seen = Set<String>()
                let keys = (0..<Int.random(in: 0...4, using: &rng)).map { _ in string() }.filter { key in
                    seen.insert(
                        (try? JSONSerialization.jsonObject(with: Data(key.utf8), options: .fragmentsAllowed)) as? String
                            ?? key
                    ).inserted
                }
                return "{"
                    + keys.map { space() + $0 + space() + ":" + space() + value(depth + 1) }.joined(separator: ",")
                    + "}"
            }
        }
    }

    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func generatedDocumentsReadAsPythonReadsThem() throws {
        var g = Generator()
        let texts = (0..<3000).map { _ in g.space() + g.value(0) + g.space() }
        let expected = try Self.python(texts.map { Array($0.utf8) })
        for (text, canonical) in zip(texts, expected) {
            let python = try #require(canonical, "Python refused \(text)")
            let got = try JSONValue(parsing: Array(text.utf8))
            #expect(Self.normalized(got) == Self.normalized(try JSONValue(parsing: Array(python.utf8))), "\(text)")
            // Written back and read again, it is the same value.
            #expect(try JSONValue(parsing: got.jsonBytes()) == got, "\(text)")
        }
    }

    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func whatPythonRefusesIsRefused() throws {
        let bad: [[UInt8]] =
            [
                "", " ", "{", "}", "[", "]", "[1,]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{a:1}", "['a']", "01",
                "-01", "1.",
                ".5", "+1", "-", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "tru", "nul", "falsey", "[1 2]",
                "1 2",
                "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"a\u{1}b\"", "\"tab\there\"", "// c\n1", "/* c */ 1",
                "[1]]",
                "{\"a\":1}}", "[,1]", "{,}", "\"\\\"",
            ].map { Array($0.utf8) } + [
                [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x5B, 0x00, 0x5D],
            ]
        for (bytes, reading) in zip(bad, try Self.python(bad)) {
            let text = String(decoding: bytes, as: UTF8.self).debugDescription
            #expect(reading == nil, "Python accepts \(text): the list is wrong")
            #expect(throws: (any Error).self, "\(text)") { try JSONValue(parsing: bytes) }
        }
        // The chosen differences: refused here, read by Python.
        let stricter = ["\"\\uD800\"", "\"\\uDC00\"", "\"\\uD800\\u0041\""].map { Array($0.utf8) }
        for (bytes, reading) in zip(stricter, try Self.python(stricter)) {
            #expect(reading != nil)
            #expect(throws: (any Error).self) { try JSONValue(parsing: bytes) }
        }
        // Python keeps a repeated key's last value; here it is an error that names the key, at any depth.
        let repeated = [
            #"{"command":"status","command":"clear"}"#, #"[{"a":1,"b":{"c":1,"c":2}}]"#, #"{"é":1,"\u00e9":2}"#,
        ]
        for (text, reading) in zip(repeated, try Self.python(repeated.map { Array($0.utf8) })) {
            #expect(reading != nil, "\(text)")
            #expect(throws: (any Error).self, "\(text)") { try JSONValue(parsing: Array(text.utf8)) }
        }
        for (text, key) in zip(repeated, ["command", "c", "é"]) {
            #expect { try JSONValue(parsing: Array(text.utf8)) } throws: {
                "\($0)".contains("duplicate key \"\(key)\"")
            }
        }
        // Python reads these as infinity (and then cannot write them as JSON).
        for text in ["1e400", "-1e400", "[1e999]"] {
            #expect(throws: (any Error).self) { try JSONValue(parsing: Array(text.utf8)) }
        }
    }

    @Test func nestingIsBoundedSoARequestCannotExhaustTheStack() throws {
        let ok = String(repeating: "[", count: JSONReader.maxDepth) + String(repeating: "]", count: JSONReader.maxDepth)
        #expect(try JSONValue(parsing: Array(ok.utf8)).array != nil)
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: (any Error).self) { try JSONValue(parsing: Array(deep.utf8)) }
    }
}
