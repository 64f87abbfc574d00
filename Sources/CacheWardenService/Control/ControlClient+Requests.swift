import CacheWarden
import FoundationEssentials

/// A running daemon's status, as its control socket answers it.
package struct DaemonStatus: Sendable {
    /// The daemon's version.
    package var version: String
    /// Every directory, from the daemon's memory.
    package var dirs: [DirectoryStatus]
    /// Every shared budget with its members' sum.
    package var groups: [GroupStatus]
}

/// A shared budget's use.
package struct GroupStatus: Sendable, Equatable {
    package var name: String
    package var total: Int64
    package var quota: Int64
    package var members: [String]

    package init(name: String, total: Int64, quota: Int64, members: [String]) {
        self.name = name
        self.total = total
        self.quota = quota
        self.members = members
    }
}

/// The typed requests: each sends one line, reads the reply and throws the daemon's error message when it says
/// `"ok": false`.
extension ControlClient {
    /// Every directory's status from the daemon's memory (no rescan).
    package func status() throws -> DaemonStatus {
        let reply = try checked(request(["command": "status"]))
        let now = Date()
        let dirs = (reply["dirs"]?.array ?? []).compactMap { Self.directoryStatus($0, now: now) }
        let groups = (reply["groups"]?.array ?? []).map { g in
            GroupStatus(
                name: g["group"]?.string ?? "", total: g["total"]?.integer ?? 0, quota: g["quota"]?.integer ?? 0,
                members: g["members"]?.strings ?? [])
        }
        return DaemonStatus(version: reply["version"]?.string ?? "", dirs: dirs, groups: groups)
    }

    /// Trims directory `dir` to `to` (a size like `"100MB"`; nil: its `trim_to` target). Returns the `trim` object.
    package func trim(_ dir: String, to: String?) throws -> [String: JSONValue] {
        var request: [String: JSONValue] = ["command": "trim", "dir": .string(dir)]
        if let to { request["to"] = .string(to) }
        return try checked(self.request(request))["trim"]?.object ?? [:]
    }

    /// Clears the named directories (all when empty); returns the reply (`removed`, `freed`, `dirs`).
    package func clear(_ dirs: [String], dryRun: Bool) throws -> [String: JSONValue] {
        try checked(
            request(["command": "clear", "dirs": .array(dirs.map(JSONValue.string)), "dry_run": .bool(dryRun)]))
    }

    /// Asks the daemon to re-read its config file.
    package func reload() throws {
        _ = try checked(request(["command": "reload"]))
    }

    /// Subscribes to the named events (all when empty); read them with `readLine(wait: true)`.
    package func subscribe(_ events: [String]) throws {
        _ = try checked(request(["command": "subscribe", "events": .array(events.map(JSONValue.string))]))
    }

    private func checked(_ reply: [String: JSONValue]) throws -> [String: JSONValue] {
        guard reply["ok"]?.bool == true else {
            var error = ControlClientError(
                "the daemon on \(path) refused: \(reply["error"]?.string ?? "no reason given")", refused: true)
            if let busy = reply["busy"], let dir = busy["dir"]?.string {
                // Not a bad request: the client's lock is held now, and may be free later.
                error.refused = false
                error.busy = Self.clientLockBusy(busy, dir: dir)
                error.waitLimit = busy["wait_limit_s"]?.integer
            }
            throw error
        }
        return reply
    }

    /// A `status` reply's directory object, back into the type `cachewarden status` prints.
    static func directoryStatus(_ o: JSONValue, now: Date) -> DirectoryStatus? {
        guard let dir = o["dir"]?.string, let path = o["path"]?.string else { return nil }
        let totals = DirectoryTotals(
            dir: dir, path: path, total: o["total"]?.integer ?? 0, files: Int(o["files"]?.integer ?? 0),
            quota: o["quota"]?.integer ?? 0)
        var status = DirectoryStatus(
            totals: totals, oldest: o["oldest_age_s"]?.number.map { now.addingTimeInterval(-$0) },
            protectedBytes: o["protected"]?.integer ?? 0, filesystemFree: o["fs_free"]?.integer,
            group: o["group"]?.string, trimTarget: o["trim_target"]?.integer,
            watches: o["watches"]?.integer.map { Int($0) }, backend: o["backend"]?.string, pollPass: pollPass(o))
        status.trimAt = o["trim_at"]?.integer
        status.hardQuota = o["hard_quota"]?.integer
        status.maxFiles = o["max_files"]?.integer.map { Int($0) }
        status.lowWatermark = o["low_watermark"]?.integer
        status.highWatermark = o["high_watermark"]?.integer
        status.polledDirectories = o["polled_dirs"]?.integer.map { Int($0) }
        status.fanotifyDirectories = o["fanotify_dirs"]?.integer.map { Int($0) }
        status.lost = o["lost"]?.string
        status.clientLock = o["client_lock"]?.string.flatMap { try? ClientLocks.parse($0).get() }
        status.deferred = o["deferred"].flatMap { deferredTrim($0, dir: dir) }
        return status
    }

    private static func pollPass(_ o: JSONValue) -> PollPassCost? {
        guard let ms = o["poll_pass_ms"]?.number else { return nil }
        return PollPassCost(
            seconds: ms / 1000, directoriesRead: Int(o["poll_dirs_read"]?.integer ?? 0),
            directoriesChecked: Int(o["poll_dirs_checked"]?.integer ?? 0))
    }
}
