import CacheWarden
/// Counters, gauges and histograms in Prometheus's text exposition format (0.0.4), what node_exporter's textfile
/// collector reads: per family a `# HELP` and a `# TYPE` line, then one line per sample, `name{label="value"} 12`.
///
/// Written here rather than with swift-prometheus: the daemon writes one small file, and that needs a few dozen
/// lines, where the package brought swift-metrics and swift-atomics with it (three dependencies, and their code
/// and lock machinery in every binary) for a registry shared across threads that nothing here shares
/// (`MetricsFileSink` confines it to its queue). The output is checked by `promtool check metrics` and scraped
/// through a real node_exporter (MetricsTests). Families come out sorted by name, samples by labels.
struct PrometheusText {
    enum Kind: String {
        case counter, gauge, histogram
    }

    private struct Histogram {
        var buckets: [Double]
        var counts: [Int64]
        var sum = 0.0
        var count: Int64 = 0
    }

    private enum Value {
        case integer(Int64)
        case number(Double)
        case histogram(Histogram)
    }

    private struct Family {
        var help: String
        var kind: Kind
        /// By rendered labels (`dir="cache",reason="quota"`, or empty).
        var samples: [String: Value] = [:]
    }

    private var families: [String: Family] = [:]

    /// Adds `by` to a counter (0 makes it exist).
    mutating func increment(_ name: String, help: String, labels: [(String, String)], by: Int64 = 1) {
        update(name, help, .counter, labels) { value in
            if case .integer(let n) = value { value = .integer(n + by) } else { value = .integer(by) }
        }
    }

    mutating func set(_ name: String, help: String, labels: [(String, String)], _ number: Double) {
        update(name, help, .gauge, labels) { $0 = .number(number) }
    }

    /// Records one observation in a histogram with these upper bounds (`+Inf` is implied).
    mutating func observe(_ name: String, help: String, labels: [(String, String)], buckets: [Double], _ number: Double)
    {
        update(name, help, .histogram, labels) { value in
            var h: Histogram
            if case .histogram(let existing) = value {
                h = existing
            } else {
                h = Histogram(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))
            }
            for (i, bound) in h.buckets.enumerated() where number <= bound { h.counts[i] += 1 }
            h.sum += number
            h.count += 1
            value = .histogram(h)
        }
    }

    /// Drops a sample; a family left without samples goes too.
    mutating func remove(_ name: String, labels: [(String, String)]) {
        families[name]?.samples[Self.render(labels)] = nil
        if families[name]?.samples.isEmpty == true { families[name] = nil }
    }

    private mutating func update(
        _ name: String, _ help: String, _ kind: Kind, _ labels: [(String, String)],
        _ change: (inout Value) -> Void
    ) {
        let key = Self.render(labels)
        var family = families[name] ?? Family(help: help, kind: kind)
        var value = family.samples[key] ?? .integer(0)
        change(&value)
        family.samples[key] = value
        families[name] = family
    }

    /// The whole exposition, ending in a newline.
    func render() -> [UInt8] {
        var out = ""
        for name in families.keys.sorted() {
            let family = families[name]!
            out +=
                "# HELP \(name) \(Self.escaped(family.help, quotes: false))\n# TYPE \(name) \(family.kind.rawValue)\n"
            for labels in family.samples.keys.sorted() {
                switch family.samples[labels]! {
                case .integer(let n): out += "\(name)\(Self.braced(labels)) \(n)\n"
                case .number(let x): out += "\(name)\(Self.braced(labels)) \(Self.text(x))\n"
                case .histogram(let h): out += Self.lines(name, labels, h)
                }
            }
        }
        return Array(out.utf8)
    }

    private static func lines(_ name: String, _ labels: String, _ h: Histogram) -> String {
        let prefix = labels.isEmpty ? "" : labels + ","
        var out = ""
        for (bound, count) in zip(h.buckets, h.counts) {
            out += "\(name)_bucket{\(prefix)le=\"\(text(bound))\"} \(count)\n"
        }
        out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(h.count)\n"
        out += "\(name)_sum\(braced(labels)) \(text(h.sum))\n"
        out += "\(name)_count\(braced(labels)) \(h.count)\n"
        return out
    }

    /// A float as Prometheus reads it (Swift's shortest round-trip form; `+Inf`, `-Inf`, `NaN`).
    private static func text(_ x: Double) -> String {
        if x.isNaN { return "NaN" }
        if x.isInfinite { return x > 0 ? "+Inf" : "-Inf" }
        return "\(x)"
    }

    private static func render(_ labels: [(String, String)]) -> String {
        labels.map { "\($0.0)=\"\(escaped($0.1, quotes: true))\"" }.joined(separator: ",")
    }

    private static func braced(_ labels: String) -> String { labels.isEmpty ? "" : "{\(labels)}" }

    /// Label values escape `\`, `"` and newlines; help text `\` and newlines.
    private static func escaped(_ s: String, quotes: Bool) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"" where quotes: out += "\\\""
            default: out.append(c)
            }
        }
        return out
    }
}
