import CacheWarden
import FoundationEssentials

/// The replies of the control socket, one JSON object per line, each with `"ok"` and the request's `"command"`; an
/// error reply says what to fix (`"error"`).
enum ControlReply {
    static func error(_ command: String?, _ message: String) -> [UInt8] {
        var j = JSONLineBuilder()
        j.add("ok", false)
        j.add("command", command)
        j.add("error", message)
        return j.finish()
    }

    /// A request refused because a client holds its lock: the error, and `"busy"` with the lock, why, who holds
    /// it and how long the daemon lets its own trims wait (`wait_limit_s`, `client_lock_wait`): what the commands
    /// wait on.
    static func busy(_ command: String, _ busy: ClientLockBusy, message: String, waitLimit: Int64) -> [UInt8] {
        var j = JSONLineBuilder()
        j.add("ok", false)
        j.add("command", command)
        j.add("error", message)
        j.addObject("busy") { inner in
            inner.add("dir", busy.dir)
            inner.add(busy)
            inner.add("wait_limit_s", waitLimit)
        }
        return j.finish()
    }

    static func ok(_ command: String, _ fill: (inout JSONLineBuilder) -> Void = { _ in }) -> [UInt8] {
        var j = JSONLineBuilder()
        j.add("ok", true)
        j.add("command", command)
        fill(&j)
        return j.finish()
    }

    static func version() -> [UInt8] {
        ok("version") { j in
            j.add("version", CacheWardenVersion.current)
            j.add("commands", ControlRequest.commands)
            j.add("events", ControlRequest.eventNames.sorted())
        }
    }

    /// Every directory's status from memory, and each group's sum.
    static func status(_ dirs: [DirectoryStatus], groups: [GroupSettings]) -> [UInt8] {
        let now = Date()
        return ok("status") { j in
            j.add("version", CacheWardenVersion.current)
            j.addObjects("dirs", dirs) { $0.add($1, now: now) }
            j.addObjects("groups", groups) { inner, g in
                let members = dirs.filter { $0.group == g.name }
                inner.add("group", g.name)
                inner.add("total", members.reduce(Int64(0)) { $0 + $1.totals.total })
                inner.add("quota", g.quota)
                inner.add("members", members.map(\.totals.dir))
            }
        }
    }

    static func trim(_ report: TrimReport) -> [UInt8] {
        ok("trim") { j in
            var inner = JSONLineBuilder(object: true)
            inner.add(report)
            j.addRaw("trim", inner.finishObject())
        }
    }

    static func clear(_ report: ClearReport, dryRun: Bool) -> [UInt8] {
        ok("clear") { j in
            j.add("dirs", report.dirs)
            j.add("removed", report.removed)
            j.add("freed", report.freed)
            if dryRun { j.add("dry_run", true) }
        }
    }
}
