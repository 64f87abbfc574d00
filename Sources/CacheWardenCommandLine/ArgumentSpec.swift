/// One positional argument of a command.
public struct ArgumentSpec: Sendable {
    public var name: String
    public var help: String
    /// Takes every remaining positional (zero or more); only the last argument may.
    public var repeated: Bool
    public var optional: Bool
    public var completion: Completion

    public init(_ name: String, help: String, repeated: Bool = false, optional: Bool = false, completion: Completion = .none) {
        self.name = name
        self.help = help
        self.repeated = repeated
        self.optional = optional || repeated
        self.completion = completion
    }

    var synopsis: String { repeated ? "[<\(name)> ...]" : optional ? "[<\(name)>]" : "<\(name)>" }
}
