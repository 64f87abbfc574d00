/// A process holding a client's lock, as `/proc` shows it: its pid and its name.
public struct ClientLockHolder: Sendable, Equatable {
    public var pid: Int32
    /// `/proc/<pid>/comm`, the process's name, at most 15 characters (e.g. `cargo`), not its command line (nil
    /// when it cannot be read: a process that has exited).
    public var command: String?

    public init(pid: Int32, command: String?) {
        self.pid = pid
        self.command = command
    }

    /// `pid 4242 (uv run python)`.
    public var text: String { "pid \(pid)" + (command.map { " (\($0))" } ?? "") }
}

/// Why a client's lock could not be taken (or kept): nothing is deleted while it is so.
public struct ClientLockBusy: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Why: String, Sendable {
        /// Another process holds it.
        case held
        /// The file at the path changed while it was being taken (replaced, removed or created): another try.
        case replaced
        /// The file taken was removed or replaced while held, or a missing one appeared: the trim stopped.
        case vanished
        /// It cannot be a lock: not a regular file, a symlink, or it cannot be opened (`detail` says which).
        case unusable
    }

    /// The registered directory.
    public var dir: String
    /// The lock file, relative to the root (`../NAME` beside it), with `{unit}` and patterns filled in.
    public var lock: String
    public var why: Why
    /// For `unusable`: what is wrong with it.
    public var detail: String?
    /// Who holds it (`held`), as far as `/proc` tells; empty when no holder could be found.
    public var holders: [ClientLockHolder]

    public init(dir: String, lock: String, why: Why, detail: String? = nil, holders: [ClientLockHolder] = []) {
        self.dir = dir
        self.lock = lock
        self.why = why
        self.detail = detail
        self.holders = holders
    }

    /// One line: `the client's lock .lock of uv is held by pid 4242 (uv run python)`.
    public var description: String {
        let head = "the client's lock \(lock) of \(dir)"
        switch why {
        case .held:
            let who =
                holders.isEmpty
                ? "another process"
                : holders.prefix(3).map(\.text).joined(separator: ", ")
                    + (holders.count > 3 ? " and \(holders.count - 3) more" : "")
            return "\(head) is held by \(who)"
        case .replaced: return "\(head) was replaced while it was being taken"
        case .vanished: return "\(head) was removed, replaced or created while held"
        case .unusable: return "\(head) cannot be taken: \(detail ?? "not a lock file")"
        }
    }
}
