import Foundation

/// A running daemon's status, as its control socket answers it.
public struct DaemonStatus: Sendable {
    /// The daemon's version.
    public var version: String
    /// Every directory, from the daemon's memory.
    public var dirs: [DirectoryStatus]
    /// Every shared budget with its members' sum.
    public var groups: [GroupStatus]
}

/// A shared budget's use.
public struct GroupStatus: Sendable, Equatable {
    public var name: String
    public var total: Int64
    public var quota: Int64
    public var members: [String]

    public init(name: String, total: Int64, quota: Int64, members: [String]) {
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
    public func status() throws -> DaemonStatus {
        let reply = try checked(request(["command": "status"]))
        let now = Date()
        let dirs = (reply["dirs"] as? [[String: Any]] ?? []).compactMap { Self.directoryStatus($0, now: now) }
        let groups = (reply["groups"] as? [[String: Any]] ?? []).map { g in
            GroupStatus(name: g["group"] as? String ?? "", total: Self.int64(g["total"]), quota: Self.int64(g["quota"]),
                        members: g["members"] as? [String] ?? [])
        }
        return DaemonStatus(version: reply["version"] as? String ?? "", dirs: dirs, groups: groups)
    }

    /// Trims directory `dir` to `to` (a size like `"100MB"`; nil: its `trim_to` target). Returns the `trim` object.
    public func trim(_ dir: String, to: String?) throws -> [String: Any] {
        var request: [String: Any] = ["command": "trim", "dir": dir]
        if let to { request["to"] = to }
        return try checked(self.request(request))["trim"] as? [String: Any] ?? [:]
    }

    /// Clears the named directories (all when empty); returns the reply (`removed`, `freed`, `dirs`).
    public func clear(_ dirs: [String], dryRun: Bool) throws -> [String: Any] {
        try checked(request(["command": "clear", "dirs": dirs, "dry_run": dryRun]))
    }

    /// Asks the daemon to re-read its config file.
    public func reload() throws {
        _ = try checked(request(["command": "reload"]))
    }

    /// Subscribes to the named events (all when empty); read them with `readLine(wait: true)`.
    public func subscribe(_ events: [String]) throws {
        _ = try checked(request(["command": "subscribe", "events": events]))
    }

    private func checked(_ reply: [String: Any]) throws -> [String: Any] {
        guard reply["ok"] as? Bool == true else {
            throw ControlClientError("the daemon on \(path) refused: \(reply["error"] as? String ?? "no reason given")", refused: true)
        }
        return reply
    }

    static func int64(_ value: Any?) -> Int64 { (value as? NSNumber)?.int64Value ?? 0 }

    /// A `status` reply's directory object, back into the type `cachewarden status` prints.
    static func directoryStatus(_ o: [String: Any], now: Date) -> DirectoryStatus? {
        guard let dir = o["dir"] as? String, let path = o["path"] as? String else { return nil }
        let totals = DirectoryTotals(dir: dir, path: path, total: int64(o["total"]), files: Int(int64(o["files"])),
                                     quota: int64(o["quota"]))
        return DirectoryStatus(
            totals: totals, oldest: (o["oldest_age_s"] as? NSNumber).map { now.addingTimeInterval(-$0.doubleValue) },
            protectedBytes: int64(o["protected"]), filesystemFree: (o["fs_free"] as? NSNumber)?.int64Value,
            group: o["group"] as? String, trimTarget: (o["trim_target"] as? NSNumber)?.int64Value,
            watches: (o["watches"] as? NSNumber).map { $0.intValue })
    }
}
