import Foundation

/// Human-readable numbers for the table and the progress log.
enum Format {
    /// `x` with `places` decimals.
    static func decimal(_ x: Double, _ places: Int) -> String {
        x.isFinite ? String(format: "%.\(places)f", x) : "n/a"
    }

    /// Seconds as "850 µs", "12.3 ms" or "1.23 s".
    static func seconds(_ s: Double) -> String {
        if !s.isFinite { return "n/a" }
        if s < 0.001 { return "\(decimal(s * 1e6, 0)) µs" }
        if s < 1 { return "\(decimal(s * 1e3, s < 0.01 ? 2 : 1)) ms" }
        return "\(decimal(s, s < 10 ? 2 : 1)) s"
    }

    /// Milliseconds as "3.41 ms".
    static func ms(_ ms: Double) -> String { seconds(ms / 1000) }

    /// A rate as "123.4k" or "1.23M".
    static func rate(_ r: Double) -> String {
        if !r.isFinite { return "n/a" }
        if r >= 1e6 { return "\(decimal(r / 1e6, 2))M" }
        if r >= 1e3 { return "\(decimal(r / 1e3, 1))k" }
        return decimal(r, 0)
    }

    /// Bytes in binary units.
    static func bytes(_ b: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(b)
        var u = 0
        while abs(v) >= 1024 && u < units.count - 1 { v /= 1024; u += 1 }
        return u == 0 ? "\(b) B" : "\(decimal(v, v < 10 ? 2 : 1)) \(units[u])"
    }

    /// A count with thousands separators: 1,000,000.
    static func count(_ n: Int) -> String {
        let s = String(n.magnitude)
        var out = ""
        for (i, c) in s.enumerated() {
            if i > 0 && (s.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// A file count as "10k", "1M".
    static func shortCount(_ n: Int) -> String {
        if n >= 1_000_000 && n % 1_000_000 == 0 { return "\(n / 1_000_000)M" }
        if n >= 1000 && n % 1000 == 0 { return "\(n / 1000)k" }
        return count(n)
    }

    /// `a / b` as "×0.42"; "n/a" when either is missing or `b` is 0.
    static func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b != 0, a.isFinite, b.isFinite else { return "n/a" }
        let r = a / b
        return "×" + decimal(r, r < 10 ? 2 : 1)
    }
}
