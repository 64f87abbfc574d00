/// One lock a cache's own client takes on its cache (`dir.<name>.client_lock`): a file, relative to the root, and
/// how to take it. CacheWarden takes it before a trim deletes anything there, never blocking, and never creates,
/// writes, renames or deletes it (see `ClientLocks`).
public struct ClientLock: Sendable, Equatable {
    /// How the lock is taken.
    public enum Kind: String, Sendable {
        /// `flock(2)`, exclusive (`LOCK_EX | LOCK_NB`): uv, cargo, huggingface_hub (filelock), Go.
        case flock
        /// An open-file-description lock over the whole file (`F_OFD_SETLK`): a write lock where the file can be
        /// opened read-write, which conflicts with every POSIX lock of `fcntl`, `lockf` and Java's
        /// `FileChannel.tryLock` (Gradle), read or write; else a read lock, which conflicts with write locks only.
        case ofd
    }

    /// The path as written: relative to the root, `../NAME` for a file directly beside it; a component may be
    /// `{unit}` (the unit being evicted) or hold `*`, `?` and `[…]` (every file that matches).
    public var path: String
    public var kind: Kind

    public init(_ path: String, kind: Kind = .flock) {
        self.path = path
        self.kind = kind
    }

    /// The placeholder a component may be: the unit being evicted, relative to the root.
    public static let unitPlaceholder = "{unit}"

    /// The path's components (`..` first for a file beside the root).
    var components: [Substring] { path.split(separator: "/", omittingEmptySubsequences: false) }

    /// `../NAME`: a file directly beside the root (cargo's locks are in `CARGO_HOME`, above `registry/`).
    var isBesideRoot: Bool { components.first == ".." }

    /// Taken per unit: the path holds `{unit}`.
    var isPerUnit: Bool { components.contains { $0 == Self.unitPlaceholder } }

    /// Matches files by a pattern (or per unit): it names whatever is there, rather than one file.
    var isPattern: Bool { isPerUnit || components.contains { Self.isGlob($0) } }

    static func isGlob(_ component: Substring) -> Bool { component.contains { $0 == "*" || $0 == "?" || $0 == "[" } }

    /// As the config file writes it (the kind only when it is not the default).
    public var configText: String { kind == .flock ? path : "\(path) \(kind.rawValue)" }

    /// Why `path` cannot name a client's lock, or nil: absolute, empty or `.` components, or leaving the root —
    /// but for `../NAME`, one file directly beside it. A backslash is refused: `fnmatch` reads `\*` as a literal
    /// `*`, which the lock's `protect` glob cannot say, so that lock file could be trimmed.
    static func pathProblem(_ path: String) -> String? {
        if path.contains("\\") {
            return
                "\(path) has a backslash; a lock path has no escapes (a lock file named with `*`, `?`, `[` or `\\` cannot be named)"
        }
        if path.hasPrefix("/") {
            return "\(path) is absolute; expected a path relative to the root (or ../NAME, a file directly beside it)"
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if parts.contains(where: { $0.isEmpty || $0 == "." }) {
            return "\(path) has an empty or `.` component; expected a path like .lock or .locks/{unit}/*.lock"
        }
        if let up = parts.firstIndex(of: "..") {
            guard up == 0, parts.count == 2, parts[1] != "..", !isGlob(parts[1]), parts[1] != unitPlaceholder else {
                return
                    "\(path) is outside the root; a lock is a file in the root, or ../NAME, one file directly beside it"
            }
        }
        if parts.filter({ $0 == unitPlaceholder }).count > 1 {
            return "\(path) has {unit} twice; expected it once, as a whole component"
        }
        if parts.first.map({ $0 == unitPlaceholder }) == true {
            return
                "\(path) is inside its own unit, which could then never be deleted whole (a lock file is never a victim); expected a lock beside the units, like .locks/{unit}/*.lock"
        }
        if parts.contains(where: { $0 != unitPlaceholder && $0.contains("{") }) {
            return "\(path): {unit} must be a whole component, like .locks/{unit}/*.lock"
        }
        return nil
    }
}

/// A directory's client locks (`dir.<name>.client_lock`), taken in order before a trim deletes anything there and
/// all released if one is busy: `../.package-cache-mutate, ../.package-cache` is cargo's own garbage collector's
/// `MutateExclusive`. Those with `{unit}` are taken per unit, just before the unit is deleted. An empty list (`none`)
/// takes nothing, overriding a profile's.
public struct ClientLocks: Sendable, Equatable {
    public var locks: [ClientLock]

    public init(_ locks: [ClientLock]) { self.locks = locks }

    /// Globs (`protect` syntax) of the lock files in the root: a lock file is never a victim — deleting it would
    /// end the exclusion it is for (`{unit}` stands for any depth, a `[…]` component for any name).
    var protectGlobs: [String] {
        locks.filter { !$0.isBesideRoot }.map { lock in
            "/"
                + lock.components.map { $0 == ClientLock.unitPlaceholder ? "**" : $0.contains("[") ? "*" : String($0) }
                .joined(separator: "/")
        }
    }

    /// The per-unit locks.
    var perUnit: [ClientLock] { locks.filter(\.isPerUnit) }

    public var isEmpty: Bool { locks.isEmpty }

    /// As the config file writes it: `none` for no lock.
    public var configText: String { locks.isEmpty ? "none" : locks.map(\.configText).joined(separator: ", ") }

    /// The expectation a bad value is told.
    static let expectation =
        "comma-separated lock files relative to the root, each with an optional kind (flock or ofd), like `.lock`, `../.package-cache-mutate, ../.package-cache` or `.locks/{unit}/*.lock`; or none"

    /// Reads a `client_lock` value; the error is what to write instead.
    public static func parse(_ text: String) -> Result<ClientLocks, ClientLockSyntaxError> {
        if text == "none" { return .success(ClientLocks([])) }
        var locks: [ClientLock] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: false) {
            let words = entry.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let path = words.first, words.count <= 2 else { return .failure(ClientLockSyntaxError(expectation)) }
            guard let kind = words.count == 2 ? ClientLock.Kind(rawValue: words[1]) : .flock else {
                return .failure(
                    ClientLockSyntaxError("unknown lock kind `\(words[1])`; expected flock or ofd after the path"))
            }
            if let problem = ClientLock.pathProblem(path) { return .failure(ClientLockSyntaxError(problem)) }
            guard !locks.contains(where: { $0.path == path }) else {
                return .failure(ClientLockSyntaxError("\(path) is named twice; name each lock once"))
            }
            locks.append(ClientLock(path, kind: kind))
        }
        return .success(ClientLocks(locks))
    }
}

/// A `client_lock` value that cannot be read, worded as what to write instead.
public struct ClientLockSyntaxError: Error, Sendable, Equatable {
    public var message: String
    init(_ message: String) { self.message = message }
}
