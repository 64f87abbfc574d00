import Foundation
import Testing
@testable import CacheWarden

/// `ByteText` formats with integer math; `String(format:)` (Foundation, as the formatter was before) is the
/// reference it must agree with.
@Suite struct ByteTextTests {
    /// The formatter as it was: `%.1f` of the quotient, divided as a `Double` one unit at a time.
    static func reference(_ bytes: Int64, binary: Bool) -> String {
        let base: Double = binary ? 1024 : 1000
        let units = binary ? ["B", "KiB", "MiB", "GiB", "TiB"] : ["B", "kB", "MB", "GB", "TB"]
        var v = Double(bytes)
        var i = 0
        while abs(v) >= base && i < units.count - 1 { v /= base; i += 1 }
        return i == 0 ? "\(bytes)B" : String(format: "%.1f%@", v, units[i])
    }

    @Test func theEdgesOfEachUnitAndOfRounding() {
        let binary: [(Int64, String)] = [
            (0, "0B"), (1, "1B"), (1023, "1023B"), (1024, "1.0KiB"), (1075, "1.0KiB"), (1076, "1.1KiB"),
            (1280, "1.2KiB"), // 1.25 exactly: a tie, to even
            (1331, "1.3KiB"), (1535, "1.5KiB"), (1536, "1.5KiB"), (1_048_575, "1024.0KiB"), (1_048_576, "1.0MiB"),
            (10_485_759, "10.0MiB"), (1_073_741_824, "1.0GiB"), (1 << 40, "1.0TiB"), (1 << 50, "1024.0TiB"),
            (Int64.max, "8388608.0TiB"), (-1, "-1B"), (-1536, "-1.5KiB"), (Int64.min, "-8388608.0TiB"),
        ]
        for (bytes, text) in binary {
            #expect(ByteText.format(bytes, binary: true) == text, "\(bytes)")
            #expect(ByteText.format(bytes, binary: true) == Self.reference(bytes, binary: true), "\(bytes)")
        }
        let decimal: [(Int64, String)] = [
            (999, "999B"), (1000, "1.0kB"), (1049, "1.0kB"), (1050, "1.0kB"), (1051, "1.1kB"), (1250, "1.2kB"),
            (1350, "1.4kB"), (999_949, "999.9kB"), (999_950, "1000.0kB"), (999_999, "1000.0kB"), (1_000_000, "1.0MB"),
            (4024, "4.0kB"), (-4024, "-4.0kB"), (Int64.max, "9223372.0TB"),
        ]
        for (bytes, text) in decimal {
            #expect(ByteText.format(bytes, binary: false) == text, "\(bytes)")
        }
    }

    @Test func agreesWithPrintfOnEveryValueNearTheUnitsAndOnRandomOnes() {
        var values: [Int64] = Array(0...300_000)
        for unit: Int64 in [1 << 20, 1 << 30, 1 << 40, 1_000_000, 1_000_000_000] {
            values += (-2000...2000).map { unit + $0 } + (1...2000).map { unit * $0 / 7 }
        }
        var rng = SystemRandomNumberGenerator()
        values += (0..<20_000).map { _ in Int64.random(in: -(1 << 52)...(1 << 52), using: &rng) }
        for bytes in values {
            #expect(ByteText.format(bytes, binary: true) == Self.reference(bytes, binary: true), "\(bytes)")
            // Units of 1000 are not exact in binary: `%.1f` of the Double quotient can fall either side of an
            // exact tie (1150 B is 1.1499… as a Double). Integer math rounds the exact value; ties are skipped here.
            let m = bytes.magnitude
            let unit = [UInt64(1_000_000_000_000), 1_000_000_000, 1_000_000, 1000].first { m >= $0 } ?? 1
            let exactTie = unit > 1 && (m * 20) % (2 * unit) == unit
            // Below 100 TB the Double's error (a few ulps) stays far below the distance to the nearest tie (1/unit).
            if m < 100_000_000_000_000 && !exactTie {
                #expect(ByteText.format(bytes, binary: false) == Self.reference(bytes, binary: false), "\(bytes)")
            }
        }
    }

    @Test func percentagesRoundAsPrintfDid() {
        #expect(ByteText.percent(4024, of: 10240) == "39%")
        #expect(ByteText.percent(0, of: 0) == "0%")
        #expect(ByteText.percent(5, of: 0) == "500%")
        #expect(ByteText.percent(Int64.max, of: 1) == "\(UInt64.max)%", "saturates rather than overflowing")
        for (part, whole) in [
            (1, 200), (3, 200), (5, 200), (1, 3), (2, 3), (995, 1000), (1005, 1000), (7, 7), (120, 100),
        ] {
            let reference = String(format: "%.0f%%", Double(part) * 100 / Double(whole))
            #expect(ByteText.percent(Int64(part), of: Int64(whole)) == reference, "\(part)/\(whole)")
        }
        for _ in 0..<5000 {
            let whole = Int64.random(in: 1...(1 << 40)), part = Int64.random(in: 0...(whole * 3))
            #expect(
                ByteText.percent(part, of: whole) == String(format: "%.0f%%", Double(part) * 100 / Double(whole)),
                "\(part)/\(whole)")
        }
    }
}
