/// What a shell offers for a value or an argument.
public enum Completion: Sendable, Equatable {
    case none
    case file
    case directory
    case values([String])
}
