/// The two kinds of duration the settings hold, each with its bounds: what the config file accepts, what
/// `WardenSettings.validate()` accepts of settings built in code, and what docs/configuration.md's "Value syntaxes"
/// table and `cachewarden.conf(5)` say. Bounded, a duration is far from where time arithmetic could overflow
/// (about 292 years in nanoseconds; see `Nanoseconds`).
package enum DurationKind: Sendable {
    /// How old a file is (`max_age`, `min_age`): 1 s to 100 years; the file may write months (`mo`, 30 days).
    case age
    /// How long between two passes, or how long to wait (`expire_interval`, `poll_interval`, `low_disk_interval`,
    /// `metrics_interval`, `trim_after_idle`): 1 s to a week.
    case interval

    /// The largest value, in seconds.
    package var limit: Int64 {
        switch self {
        case .age: 36_500 * 86_400
        case .interval: 7 * 86_400
        }
    }

    /// The largest value as the config file writes it.
    package var limitText: String {
        switch self {
        case .age: "36500d (100 years)"
        case .interval: "1w"
        }
    }

    /// Whether `seconds` is within the bounds.
    package func admits(_ seconds: Int64) -> Bool { (1...limit).contains(seconds) }
}
