/// One positional argument of a command.
package struct ArgumentSpec: Sendable {
    package var name: String
    package var help: String
    /// Takes every remaining positional (zero or more); only the last argument may.
    package var repeated: Bool
    package var optional: Bool
    package var completion: Completion

    package init(
        _ name: String, help: String, repeated: Bool = false, optional: Bool = false, completion: Completion = .none
    ) {
        self.name = name
        self.help = help
        self.repeated = repeated
        self.optional = optional || repeated
        self.completion = completion
    }

    var synopsis: String { repeated ? "[<\(name)> ...]" : optional ? "[<\(name)>]" : "<\(name)>" }
}
