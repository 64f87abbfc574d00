import CWardenShims

/// The process's open-file limit (`RLIMIT_NOFILE`). A trim holds each client lock file it takes open, and
/// huggingface_hub keeps one lock file per blob: `cachewarden run` and a daemon-less `clear` raise the soft limit to
/// the hard one when they start, as systemd recommends for programs that need many descriptors (its default soft
/// limit is 1024 for select(2)'s sake, which CacheWarden does not use; the hard one 524,288). Units' locks may then
/// hold a quarter of it (`UnitLockBudget.defaultLimit()`, one budget for the process).
public enum OpenFileLimit {
    /// Raises the soft limit to the hard one (left as it is when that fails: the unit lock budget follows the
    /// limit there is).
    public static func raiseToHard() {
        var soft: UInt64 = 0, hard: UInt64 = 0
        _ = cwsys_open_files_limit(1, &soft, &hard)
    }

    /// The soft limit now (`UInt64.max`: none); nil when it cannot be read.
    static func soft() -> UInt64? {
        var soft: UInt64 = 0, hard: UInt64 = 0
        return cwsys_open_files_limit(0, &soft, &hard) == 0 ? soft : nil
    }
}
