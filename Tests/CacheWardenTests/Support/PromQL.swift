import Foundation

/// The metric names a PromQL expression reads. Not a parser (`promtool check rules` is the parser the tests give
/// every query to): what is left of an expression once its strings, label matchers, ranges and grouping label lists
/// are gone is names, functions (followed by `(`), keywords and numbers, and only names are kept.
enum PromQL {
    static let keywords: Set<String> = [
        "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
        "group_left", "group_right", "inf", "nan", "Inf", "NaN",
    ]

    static func metricNames(_ expr: String) -> Set<String> {
        var e = expr
        for (pattern, with) in [
            (#""(\\.|[^"\\])*"|'(\\.|[^'\\])*'|`[^`]*`"#, "\"\""), (#"\{[^}]*\}"#, " "),
            (#"\[[^\]]*\]"#, " "),
            (#"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"#, " "),
        ] {
            e = e.replacingOccurrences(of: pattern, with: with, options: .regularExpression)
        }
        let chars = Array(e)
        var names = Set<String>()
        var i = 0
        while i < chars.count {
            guard chars[i].isLetter || chars[i] == "_" || chars[i] == ":" else { i += 1; continue }
            let start = i
            while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == ":" {
                i += 1
            }
            let word = String(chars[start..<i])
            // A number's exponent or a duration's unit (`1e9`, `5m`), a function call, or a keyword: not a name.
            let afterNumber = start > 0 && (chars[start - 1].isNumber || chars[start - 1] == ".")
            var next = i
            while next < chars.count, chars[next] == " " || chars[next] == "\n" { next += 1 }
            let isCall = next < chars.count && chars[next] == "("
            if !afterNumber && !isCall && !keywords.contains(word) { names.insert(word) }
        }
        return names
    }
}
