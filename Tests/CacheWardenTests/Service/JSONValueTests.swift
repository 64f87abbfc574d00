import Foundation
import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// The control protocol's JSON values, checked against Foundation's `JSONSerialization` (what clients in other
/// languages resemble); `JSONReaderReferenceTests` checks the reader against `JSONDecoder` at length.
@Suite struct JSONValueTests {
    @Test func readsWhatJSONSerializationReadsAndKeepsIntegersExact() throws {
        let text = #"{"a":[1,-2,9223372036854775807,1.5,1e3,true,false,null,"x\/y\u00e9\n"],"b":{"c":{}},"d":[]}"#
        let v = try JSONValue(parsing: Array(text.utf8))
        let a = try #require(v["a"]?.array)
        #expect(a[0] == .integer(1) && a[1] == .integer(-2) && a[2] == .integer(Int64.max))
        #expect(a[3] == .number(1.5) && a[4].integer == 1000 && a[5] == .bool(true) && a[6] == false && a[7] == .null)
        #expect(a[8].string == "x/yé\n")
        #expect(v["b"]?["c"] == .object([:]) && v["d"] == .array([]) && v["missing"] == nil)
        for bad in ["", "{", "{\"a\":}", "nul", "\u{1}"] {
            #expect(throws: (any Error).self, "\(bad)") { try JSONValue(parsing: Array(bad.utf8)) }
        }
    }

    @Test func printsWhatJSONSerializationReadsBackWithSortedKeys() throws {
        let value: JSONValue = [
            "total_before": 3, "dir": "c/d\"\u{1}é", "dry_run": false, "duration_ms": .number(0.55),
            "dirs": ["a", "b"], "total": 1, "nothing": nil, "tiny": .number(1e-7), "big": .integer(Int64.min),
        ]
        let text = value.jsonText
        #expect(
            text.hasPrefix(
                #"{"big":-9223372036854775808,"dir":"c/d\"\u0001é","dirs":["a","b"],"dry_run":false,"duration_ms":0.55,"#
            ), "\(text)")
        let read = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(
            read["dir"] as? String == "c/d\"\u{1}é" && read["duration_ms"] as? Double == 0.55
                && read["tiny"] as? Double == 1e-7)
        #expect(
            (read["big"] as? NSNumber)?.int64Value == Int64.min && read["nothing"] is NSNull
                && read["dirs"] as? [String] == ["a", "b"])
        #expect(JSONValue.number(.infinity).jsonText == "null" && JSONValue.array([.number(.nan)]).jsonText == "[null]")
        // What is printed reads back as the same value.
        #expect(try JSONValue(parsing: value.jsonBytes()) == value)
    }
}
