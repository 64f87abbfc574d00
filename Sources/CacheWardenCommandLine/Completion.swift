/// What a shell offers for a value or an argument.
package enum Completion: Sendable, Equatable {
    case none
    case file
    case directory
    case values([String])
}
