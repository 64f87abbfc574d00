/// Parsers for the value syntaxes of the config file (sizes, ages, booleans, globs, thresholds). Each returns
/// `nil` for a malformed value; the caller words the error with the key's expectation.
package enum ValueParsers {
    /// `500MB`, `1.5GiB`, `0`, `4096B`: decimal units are powers of 1000, binary units powers of 1024.
    package static let sizeUnits: [(suffix: String, factor: Double)] = [
        ("KiB", 1024), ("MiB", 1024 * 1024), ("GiB", 1024 * 1024 * 1024), ("TiB", 1024 * 1024 * 1024 * 1024),
        ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("B", 1),
    ]

    package static func size(_ text: String) -> Int64? {
        let (number, unit) = splitNumber(text)
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        var factor: Double = 1
        if !unit.isEmpty {
            guard let match = sizeUnits.first(where: { $0.suffix.lowercased() == unit.lowercased() }) else { return nil }
            factor = match.factor
        } else if number.contains(".") {
            return nil // a fractional byte count needs a unit
        }
        let bytes = (value * factor).rounded()
        guard bytes < 9.2e18 else { return nil }
        return Int64(bytes)
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
