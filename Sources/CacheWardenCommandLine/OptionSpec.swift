/// One option of a command: `--long`, maybe `-s`, a flag or an option that takes a value.
package struct OptionSpec: Sendable {
    package enum Kind: Sendable, Equatable {
        /// `--name` alone; giving it a value (`--name=x`) is an error.
        case flag
        /// `--name VALUE` or `--name=VALUE` (and `-sVALUE`, `-s VALUE`); given twice, an error.
        case value
        /// As `value`, and every occurrence is kept, in order.
        case repeated
    }

    /// The long name, without the leading `--`.
    package var long: String
    package var short: Character?
    package var kind: Kind
    /// What the help shows for the value (`<file>`); unused for a flag.
    package var valueName: String
    package var help: String
    /// What a shell offers when completing the value.
    package var completion: Completion

    package init(
        long: String, short: Character? = nil, kind: Kind, valueName: String = "value", help: String,
        completion: Completion = .none
    ) {
        self.long = long
        self.short = short
        self.kind = kind
        self.valueName = valueName
        self.help = help
        self.completion = completion
    }

    package static func flag(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .flag, help: help)
    }

    package static func value(
        _ long: String, short: Character? = nil, _ valueName: String, help: String,
        completion: Completion = .none
    ) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .value, valueName: valueName, help: help, completion: completion)
    }

    package static func repeated(_ long: String, _ valueName: String, help: String, completion: Completion = .none)
        -> OptionSpec
    {
        OptionSpec(long: long, kind: .repeated, valueName: valueName, help: help, completion: completion)
    }

    var takesValue: Bool { kind != .flag }

    /// `-c, --config <file>` as the help and the manual show it.
    var synopsis: String {
        let names = (short.map { "-\($0), " } ?? "") + "--\(long)"
        return takesValue ? "\(names) <\(valueName)>" : names
    }
}
