import Foundation

/// A size report of one directory (what `cachewarden status` shows).
public struct DirectoryStatus: Sendable, Equatable {
    /// Running totals.
    public var totals: DirectoryTotals
    /// Age key of the oldest counted file, if any.
    public var oldest: Date?
    /// Bytes in protected files (counted, never deleted).
    public var protectedBytes: Int64
    /// Free bytes on the directory's filesystem (`nil` when `statvfs` failed).
    public var filesystemFree: Int64?
    /// The shared budget the directory belongs to, if any.
    public var group: String? = nil

    /// Use of the quota in percent (`nil` without a quota).
    public var usePercent: Double? {
        totals.quota > 0 ? Double(totals.total) * 100 / Double(totals.quota) : nil
    }

    /// The report as one JSON object on one line (`cachewarden status --json`), built by the same writer as the
    /// event lines. `now` is the time ages are measured from.
    public func jsonLine(now: Date = Date()) -> String {
        var j = JSONLineBuilder()
        j.add("dir", totals.dir)
        j.add("path", totals.path)
        j.add("total", totals.total)
        j.add("files", totals.files)
        j.add("quota", totals.quota)
        j.add("protected", protectedBytes)
        j.add("group", group)
        j.add("use_percent", usePercent)
        if let oldest { j.add("oldest_age_s", Int64(now.timeIntervalSince(oldest))) }
        if let filesystemFree { j.add("fs_free", filesystemFree) }
        return String(decoding: j.finish(), as: UTF8.self)
    }
}
