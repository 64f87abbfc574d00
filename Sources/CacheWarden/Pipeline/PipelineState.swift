import CacheWardenLedger

/// The data the pipeline stages pass along, owned by the engine and handed to each stage in turn: the ledger, the
/// registered roots, the settings, the events produced so far (delivered to the sinks at the end of each step),
/// and the clock and disk every stage reads time and free space from.
struct PipelineState {
    var settings: WardenSettings
    let clock: any WardenClock
    let disk: any DiskProbe
    var ledger = SizeLedger()
    var roots = RootRegistry()
    var events = EventOutbox()
    /// When each root last saw activity (uptime nanoseconds): what `trim_after_idle` waits on.
    var lastActivity: [RootID: UInt64] = [:]
    /// Roots whose trash holds units moved out of their clients' view, to be deleted a moment later
    /// (`Engine.emptyTrashes`).
    var trashToEmpty = Set<RootID>()
    /// The client locks of the trim running now, and the trims waiting for one (`ClientLockTable`).
    var clientLocks = ClientLockTable()

    init(settings: WardenSettings, clock: any WardenClock, disk: any DiskProbe) {
        self.settings = settings
        self.clock = clock
        self.disk = disk
    }

    /// The running totals of root `id`, as events and queries show them.
    func totals(_ id: RootID) -> DirectoryTotals? {
        guard let rt = roots[id] else { return nil }
        let account = ledger.account(id)
        return DirectoryTotals(
            dir: rt.name, path: rt.path, total: account?.total ?? 0, files: account?.files ?? 0,
            quota: rt.settings.quota)
    }

    /// A `write` event for record `r` of root `id`.
    mutating func emitWrite(_ r: RecordID, root id: RootID) {
        guard let rt = roots[id], let account = ledger.account(id), let inode = ledger.inode(ofRecord: r) else {
            return
        }
        events.emit(
            .write(
                FileWritten(
                    dir: rt.name, file: PathBytes.display(ledger.relativePath(ofRecord: r)),
                    size: inode.bytes, total: account.total, files: account.files,
                    quota: rt.settings.quota)))
    }
}

/// Events produced during one pipeline step, in order.
struct EventOutbox {
    private(set) var events: [WardenEvent] = []

    var isEmpty: Bool { events.isEmpty }

    mutating func emit(_ kind: WardenEvent.Kind) { events.append(WardenEvent(kind)) }

    /// Room for `count` more events at once: a trim knows about how many `evict` events it makes, and the array
    /// is then not regrown (copied into fresh pages) log₂ n times while it deletes.
    mutating func reserve(_ count: Int) { events.reserveCapacity(events.count + min(count, 1 << 20)) }

    mutating func error(_ message: String, dir: String? = nil, file: String? = nil, kind: String? = nil) {
        emit(.error(WardenIssue(message: message, dir: dir, file: file, kind: kind)))
    }

    /// The events so far; the outbox is empty afterwards.
    mutating func take() -> [WardenEvent] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }
}
