/// A command line the parser or a command's own checks refuse: one line, and where to read more.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// The command whose help explains the mistake (`cachewarden run`).
    public var command: String

    public init(_ message: String, command: String) {
        self.message = message
        self.command = command
    }

    /// `unknown option --x (see `cachewarden run --help`)`.
    public var description: String { "\(message) (see `\(command) --help`)" }
}
