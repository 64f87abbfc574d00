/// A command line the parser or a command's own checks refuse: one line, and where to read more.
package struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    /// The command whose help explains the mistake (`cachewarden run`).
    package var command: String

    package init(_ message: String, command: String) {
        self.message = message
        self.command = command
    }

    /// `unknown option --x (see `cachewarden run --help`)`.
    package var description: String { "\(message) (see `\(command) --help`)" }
}
