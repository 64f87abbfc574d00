/// What the parser read for one command: its flags, option values and positional arguments by name, with typed
/// accessors whose errors name the option.
package struct ParsedArguments: Sendable {
    /// The command's words, `["cachewarden", "run"]`.
    package let commandPath: [String]
    var flags: Set<String> = []
    var optionValues: [String: [String]] = [:]
    var argumentValues: [String: [String]] = [:]

    init(commandPath: [String]) {
        self.commandPath = commandPath
    }

    /// `cachewarden run`, as help and errors name the command.
    package var command: String { commandPath.joined(separator: " ") }

    package func flag(_ long: String) -> Bool { flags.contains(long) }

    /// The value given for `--long` (the last, for a repeated option), or nil.
    package func value(_ long: String) -> String? { optionValues[long]?.last }

    /// Every value given for `--long`, in order.
    package func values(_ long: String) -> [String] { optionValues[long] ?? [] }

    /// The positional argument `name` (the first, for a repeated one).
    package func argument(_ name: String) -> String? { argumentValues[name]?.first }

    /// Every positional that went to `name`.
    package func arguments(_ name: String) -> [String] { argumentValues[name] ?? [] }

    /// `--long` as a whole number in `range`, or nil when not given.
    package func integer(_ long: String, in range: ClosedRange<Int> = Int.min...Int.max) throws(UsageError) -> Int? {
        guard let text = value(long) else { return nil }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError(
                "bad value `\(text)` for --\(long): expected a whole number\(Self.describe(range))", command: command)
        }
        return n
    }

    /// `--long` as a number in `range`, or nil when not given.
    package func number(
        _ long: String, in range: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
    ) throws(UsageError) -> Double? {
        guard let text = value(long) else { return nil }
        guard let n = Double(text), n.isFinite, range.contains(n) else {
            let bounds =
                range.lowerBound > -Double.greatestFiniteMagnitude
                ? " from \(Self.plain(range.lowerBound)) to \(Self.plain(range.upperBound))" : ""
            throw UsageError("bad value `\(text)` for --\(long): expected a number\(bounds)", command: command)
        }
        return n
    }

    /// `--long` as one of `choices`, or nil when not given.
    package func choice(_ long: String, of choices: [String]) throws(UsageError) -> String? {
        guard let text = value(long) else { return nil }
        guard choices.contains(text) else {
            throw UsageError(
                "bad value `\(text)` for --\(long): expected \(choices.joined(separator: ", "))", command: command)
        }
        return text
    }

    /// An error about this command line (a combination the parser cannot see), pointing at this command's help.
    package func usageError(_ message: String) -> UsageError { UsageError(message, command: command) }

    private static func describe(_ range: ClosedRange<Int>) -> String {
        switch (range.lowerBound, range.upperBound) {
        case (Int.min, Int.max): ""
        case (let low, Int.max): " of at least \(low)"
        case (let low, let high): " from \(low) to \(high)"
        }
    }

    private static func plain(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}
