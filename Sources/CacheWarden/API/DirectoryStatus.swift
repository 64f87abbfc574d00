import Foundation
import Glibc

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
}

extension Watcher {
    /// A size report per directory, from the ledger (no rescan) plus one `statvfs` each.
    public func status() -> [DirectoryStatus] { statusReports() }
}

extension Engine {
    func statusReport(_ id: Int32) -> DirectoryStatus? {
        guard let t = totals(id), let rt = roots[id] else { return nil }
        var oldest: Int64?
        var protectedBytes: Int64 = 0
        if ledger.accounts[id] != nil {
            for r in ledger.records(ofRoot: id) {
                guard let state = ledger.inode(ofRecord: r) else { continue }
                oldest = min(oldest ?? state.age, state.age)
                if !rt.protect.isEmpty && rt.protect.matches(ledger.relativePath(ofRecord: r)) { protectedBytes += state.bytes }
            }
        }
        var vfs = statvfs()
        let free: Int64? = statvfs(rt.path, &vfs) == 0 ? Int64(vfs.f_bavail) * Int64(vfs.f_frsize) : nil
        return DirectoryStatus(totals: t, oldest: oldest.map { Date(timeIntervalSince1970: Double($0) / 1e9) },
                               protectedBytes: protectedBytes, filesystemFree: free)
    }
}
