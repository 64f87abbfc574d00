import CacheWarden

/// The client-lock objects of the replies, back into the library's types: a refused request's `"busy"`, and a
/// directory's `"deferred"` in `status`.
extension ControlClient {
    /// `{"lock":…,"why":…,"detail":…,"pid":…,"command":…}` (the first holder only: the reply names one).
    static func clientLockBusy(_ o: JSONValue, dir: String) -> ClientLockBusy {
        let holders =
            o["pid"]?.integer.map { [ClientLockHolder(pid: Int32(clamping: $0), command: o["command"]?.string)] } ?? []
        return ClientLockBusy(
            dir: dir, lock: o["lock"]?.string ?? "?", why: o["why"]?.string.flatMap(ClientLockBusy.Why.init) ?? .held,
            detail: o["detail"]?.string, holders: holders)
    }

    /// A directory's `"deferred"` object.
    static func deferredTrim(_ o: JSONValue, dir: String) -> DeferredTrim? {
        guard let reason = o["reason"]?.string.flatMap(TrimReason.init) else { return nil }
        return DeferredTrim(
            reason: reason, busy: clientLockBusy(o, dir: dir), waitedSeconds: o["waited_s"]?.number ?? 0,
            retrySeconds: o["retry_s"]?.number, overdue: o["overdue"]?.bool ?? false)
    }
}
