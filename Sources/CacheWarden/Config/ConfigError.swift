/// A setting that cannot be used, with where it came from and what is expected instead.
///
/// Its `description` has the compiler-style form `FILE:LINE: what is wrong and what is expected` when the setting
/// came from a config file, and just the message when it was built in code.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The config file, when the setting came from one.
    public var file: String?
    /// The 1-based line in `file`.
    public var line: Int?
    /// What is wrong and what is expected.
    public var message: String
    /// The config key at fault, when a check across keys found it (the parser turns it into a line).
    var key: String?
    /// The file is otherwise valid but registers no directory (an inert example config, such as the Debian
    /// package's): `check` and `run` refuse it, but `discover --write` may write one when it found nothing.
    public internal(set) var registersNothing = false

    /// An error about `message`, optionally located at `file:line`.
    public init(file: String? = nil, line: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// An error about key `key` of settings checked as a whole.
    init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    /// `FILE:LINE: message` (or just the message for settings built in code).
    public var description: String {
        switch (file, line) {
        case (let file?, let line?): return "\(file):\(line): \(message)"
        case (let file?, nil): return "\(file): \(message)"
        default: return message
        }
    }
}
