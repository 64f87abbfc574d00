/// Parsers for the value syntaxes of the config file (sizes, ages, booleans, globs, thresholds). Each returns
/// `nil` for a malformed value; the caller words the error with the key's expectation.
package enum ValueParsers {
    /// `500MB`, `1.5GiB`, `0`, `4096B`: decimal units are powers of 1000, binary units powers of 1024.
    package static let sizeUnits: [(suffix: String, factor: Int64)] = [
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
        ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("TB", 1_000_000_000_000), ("B", 1),
    ]

    /// What sizes are, as the errors and docs say it.
    package static let sizeRule = "a size is a whole number of bytes below 8 EiB"

    /// A size as written, or why it is none.
    package enum SizeReading: Equatable, Sendable {
        case bytes(Int64)
        /// Not a number with a size unit.
        case malformed
        /// A fraction of a byte (`0.4B`, `1.1KiB`): read as a whole number, `0.4B` would be "no quota".
        case fractional
        /// 8 EiB (2⁶³ bytes) or more: more than a signed 64-bit count holds.
        case tooLarge
    }

    package static func size(_ text: String) -> Int64? {
        guard case .bytes(let bytes) = readSize(text) else { return nil }
        return bytes
    }

    /// `text` as a size, computed exactly (no floating point: `1.1KB` is 1100 bytes, not 1100.0000000000002).
    package static func readSize(_ text: String) -> SizeReading {
        let (number, unit) = splitNumber(text)
        let factor: Int64
        if unit.isEmpty {
            guard !number.contains(".") else { return .malformed } // a fractional byte count needs a unit
            factor = 1
        } else {
            guard let match = sizeUnits.first(where: { $0.suffix.lowercased() == unit.lowercased() }) else {
                return .malformed
            }
            factor = match.factor
        }
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            parts.contains(where: { !$0.isEmpty })
        else { return .malformed }
        guard let fraction = wholeBytes(ofFraction: parts.count == 2 ? parts[1] : "", times: factor) else {
            return .fractional
        }
        let whole = parts[0].drop { $0 == "0" }
        guard whole.count <= 19, let units = Int64(whole.isEmpty ? "0" : String(whole)) else { return .tooLarge }
        let (product, overflow) = units.multipliedReportingOverflow(by: factor)
        let (bytes, overflowToo) = product.addingReportingOverflow(fraction)
        return overflow || overflowToo ? .tooLarge : .bytes(bytes)
    }

    /// `0.<digits>` × `factor` when that is a whole number: the digits are multiplied as a decimal number, whose
    /// low digits (as many as the fraction has) must all be zero; what is carried past them is the bytes.
    private static func wholeBytes(ofFraction digits: Substring, times factor: Int64) -> Int64? {
        var carry: UInt64 = 0
        for digit in digits.reversed() {
            let value = UInt64(digit.wholeNumberValue ?? 0) * UInt64(factor) + carry
            guard value % 10 == 0 else { return nil }
            carry = value / 10
        }
        return Int64(carry)
    }

    /// Why `text` is no size when it reads as a number with a size unit (a fraction of a byte, 8 EiB or more);
    /// nil otherwise: the key's own expectation then says what is expected.
    package static func sizeProblem(_ text: String) -> String? {
        switch readSize(text) {
        case .fractional: "`\(text)` is not a whole number of bytes; \(sizeRule)"
        case .tooLarge: "`\(text)` is 8 EiB or more; \(sizeRule)"
        case .bytes, .malformed: nil
        }
    }

    /// What `backend` takes.
    static let backendExpectation = "expected auto, inotify, fanotify or poll"

    /// `30s`, `5m`, `2h`, `3d`, `1w`, and `1mo` (30 days) when `allowMonths`: seconds.
    package static func age(_ text: String, allowMonths: Bool) -> Int64? {
        let (number, unit) = splitNumber(text)
        guard let value = Int64(number), value > 0 else { return nil }
        let seconds: Int64
        switch unit {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86_400
        case "w": seconds = 7 * 86_400
        case "mo" where allowMonths: seconds = 30 * 86_400
        default: return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: seconds)
        return overflow ? nil : product
    }

    /// An age (`kind == .age`, months allowed) or an interval, within the kind's bounds: seconds.
    package static func duration(_ text: String, _ kind: DurationKind) -> Int64? {
        guard let seconds = age(text, allowMonths: kind == .age), kind.admits(seconds) else { return nil }
        return seconds
    }

    package static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }

    /// `10%` (strictly between 0 and 100) or a size: a free-space threshold.
    package static func threshold(_ text: String) -> SizeLimit? {
        guard let l = limit(text, percent: 0...100), l != .percent(100) else { return nil }
        return l
    }

    /// A share like `50%` (above 0, within `percent`) or a size.
    package static func limit(_ text: String, percent: ClosedRange<Double>) -> SizeLimit? {
        if text.hasSuffix("%") {
            guard let p = Double(text.dropLast().trimmingSpaces), p > 0, percent.contains(p) else { return nil }
            return .percent(p)
        }
        return size(text).map { .bytes($0) }
    }

    /// `file`, `entry` or `depth:N` (N ≥ 1).
    package static func unit(_ text: String) -> EvictionUnit? {
        switch text {
        case "file": return .file
        case "entry": return .entry
        default:
            guard text.hasPrefix("depth:"), let n = Int(text.dropFirst(6)), n >= 1, n <= 64 else { return nil }
            return .depth(n)
        }
    }

    /// `100/s` or `100`: files per second, positive.
    package static func rate(_ text: String) -> Int? {
        let number = text.hasSuffix("/s") ? String(text.dropLast(2)).trimmingSpaces : text
        guard let n = Int(number), n > 0 else { return nil }
        return n
    }

    /// A comma-separated list of non-empty globs.
    package static func globs(_ text: String) -> [String]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces }
        guard !parts.contains(where: \.isEmpty) else { return nil }
        return parts
    }

    private static func splitNumber(_ text: String) -> (String, String) {
        let chars = Array(text)
        var i = 0
        while i < chars.count, chars[i].isNumber || chars[i] == "." { i += 1 }
        let number = String(chars[..<i])
        let unit = String(chars[i...]).trimmingSpaces
        return (number, unit)
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    package var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s = s.dropLast() }
        return String(s)
    }
}
