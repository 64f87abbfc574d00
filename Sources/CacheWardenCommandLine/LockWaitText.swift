import CacheWarden

/// What `trim` and `clear` say about waiting for a client's lock (`--timeout`, `--no-wait`), kept apart from the
/// waiting itself so that each sentence can be checked.
package enum LockWaitText {
    /// The longest `--timeout`: a year. Longer is no bound at all, and past `Int.max` seconds it cannot be counted.
    package static let maximumTimeout = 31_536_000.0

    /// `--timeout`'s value in seconds; nil when it is no number of seconds from 0 to a year.
    package static func timeout(_ text: String) -> Double? {
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= maximumTimeout else { return nil }
        return seconds
    }

    /// Why `--timeout` refused `text`.
    package static func badTimeout(_ text: String) -> String {
        "bad value `\(text)` for --timeout: expected a number of seconds from 0 to \(Int(maximumTimeout)) (a year), like 60"
    }

    /// What was deleted when the command stops waiting: nothing, unless a try ran and stopped when a lock changed
    /// under it (`why: vanished`): what it deleted before then stays deleted.
    package static func deleted(stopped: Bool) -> String {
        stopped
            ? "a trim stopped when the lock changed under it: what it deleted before then stays deleted"
            : "nothing deleted"
    }

    /// The last line when the command stops waiting: at once (`--no-wait`, `waited` nil), or after `waited` seconds.
    package static func ended(_ what: String, _ lock: ClientLockBusy, waited: Double?, stopped: Bool) -> String {
        guard let waited else { return "\(what): \(lock); not waiting (--no-wait), \(deleted(stopped: stopped))" }
        return "\(what): gave up after \(Int(waited)) s: \(lock); \(deleted(stopped: stopped))"
    }
}
