/// How the key tables read the values that have bounds, and word what they expect: the syntax, and the bound.
extension ConfigFileParser {
    /// A duration of `kind` handed to `set`, or the expectation (`like`: examples of the syntax).
    static func duration(_ text: String, _ kind: DurationKind, like examples: String, _ set: (Int64) -> Void) -> String?
    {
        guard let seconds = ValueParsers.duration(text, kind) else {
            return "expected \(examples), at most \(kind.limitText)"
        }
        set(seconds)
        return nil
    }

    /// A share of `percent` or a size handed to `set`, or the expectation.
    static func limit(_ text: String, _ percent: ClosedRange<Double>, like examples: String, _ set: (SizeLimit) -> Void)
        -> String?
    {
        guard let limit = ValueParsers.limit(text, percent: percent) else {
            return ValueParsers.sizeProblem(text) ?? "expected \(examples)"
        }
        set(limit)
        return nil
    }

    /// A free-space threshold handed to `set`, or the expectation.
    static func threshold(_ text: String, like examples: String, _ set: (SizeLimit) -> Void) -> String? {
        guard let threshold = ValueParsers.threshold(text) else {
            return ValueParsers.sizeProblem(text) ?? "expected a percentage like \(examples)"
        }
        set(threshold)
        return nil
    }
}
