import CacheWardenLedger

/// What the public API asks of the engine besides starting and stopping (all on the engine's queue).
extension Engine {
    func allTotals() -> [DirectoryTotals] { state.roots.order.compactMap { state.totals($0) } }

    /// Emits a `status` event per directory (SIGUSR1 in the CLI).
    func emitStatus() {
        assertOnQueue(queue)
        for id in state.roots.order { if let t = state.totals(id) { state.events.emit(.status(t)) } }
        deliver()
    }

    /// A size report of one root, from the ledger (no rescan) plus one `statvfs`.
    func statusReport(_ id: RootID) -> DirectoryStatus? {
        assertOnQueue(queue)
        guard let totals = state.totals(id), let rt = state.roots[id] else { return nil }
        var protectedBytes: Int64 = 0
        var oldest: Int64?
        if let top = state.ledger.account(id)?.rootNode {
            oldest = state.ledger.oldestAge(id)
            if !rt.protect.isEmpty {
                state.ledger.forEachRecord(under: top) { r in
                    guard let inode = state.ledger.inode(ofRecord: r) else { return }
                    if rt.protect.matches(state.ledger.relativePath(ofRecord: r)) { protectedBytes += inode.bytes }
                }
            }
        }
        let quota = rt.settings.quota
        let space = try? state.disk.freeSpace(of: rt.path)
        var report = DirectoryStatus(
            totals: totals, oldest: oldest.map { Date(timeIntervalSince1970: Double($0) / 1e9) },
            protectedBytes: protectedBytes, filesystemFree: space?.free,
            group: rt.settings.group, trimTarget: quota > 0 ? rt.settings.trimToBytes : nil,
            backend: backend == nil ? nil : rt.route.backend.rawValue, pollPass: backend?.pollCost(id))
        if rt.route.backend == .inotify, let w = watches(id) {
            report.watches = w.watched
            report.polledDirectories = w.polled
            report.fanotifyDirectories = w.fanotify
        }
        if quota > 0 { report.trimAt = rt.settings.trimAtBytes }
        if quota > 0, rt.settings.trimAfterIdle != nil {
            report.hardQuota = (rt.settings.hardQuota ?? .percent(200)).bytes(of: quota)
        }
        report.maxFiles = rt.settings.maxFiles
        report.lost = rt.lost
        report.clientLock = rt.settings.clientLock.flatMap { $0.isEmpty ? nil : $0 }
        report.deferred = state.clientLockWait(of: id)
        if let space, let dev = state.ledger.account(id)?.dev {
            let sharing = state.roots.all.filter { $0.lost == nil && state.ledger.account($0.id)?.dev == dev }.map(\.id)
            let marks = FreeSpaceWatermarks.of(sharing.isEmpty ? [id] : sharing, size: space.size, state)
            report.lowWatermark = marks?.low
            report.highWatermark = marks?.high
        }
        return report
    }

    /// Directories of inotify root `id` held by an inotify watch (all of them, the root too, but those past the
    /// watch limit), and those past it, served by polling or by fanotify.
    private func watches(_ id: RootID) -> (watched: Int, polled: Int, fanotify: Int)? {
        guard let backend, let account = state.ledger.account(id), account.rootNode != .none else { return nil }
        var polled = 0, fanotify = 0
        for (node, kind) in backend.pastLimitNodes where state.ledger.root(of: node) == id {
            if kind == .poll { polled += 1 } else { fanotify += 1 }
        }
        return (account.directories + 1 - polled - fanotify, polled, fanotify)
    }

    /// Trims root `name` oldest-first until its total is at most `bytes` (nil: its own `trim_to` target).
    func trim(_ name: String, to requested: Int64?) throws(WardenError) -> TrimReport {
        assertOnQueue(queue)
        guard running else { throw .notRunning }
        guard let evictor else { throw .readOnly }
        guard let id = state.roots.id(named: name) else { throw .unknownDirectory(name) }
        guard let rt = state.roots[id], rt.lost == nil else { throw .pathMissing(state.roots[id]?.path ?? name) }
        guard let bytes = requested ?? (rt.settings.quota > 0 ? rt.settings.trimToBytes : nil) else {
            throw .invalidSettings(
                ConfigError(message: "dir.\(name) has no quota, so no trim_to target: give the size to trim to"))
        }
        do throws(WardenError) { try takeRequestClientLocks([id], .manual) } catch { deliver(); throw error }
        backend?.suspend()
        defer { backend?.resume() }
        let outcome = evict(EvictionGoal(reason: .manual, roots: [id], target: .total(max(0, bytes))), with: evictor)
        let lost = state.settleClientLocks(.manual, policy: nil).lost
        let reports = outcome.reports
        carried.merge(updater.restat(outcome.changed, &state))
        settle()
        deliver()
        if let lost { throw .clientLockBusy(lost) }
        guard let report = reports.first else { throw .pathMissing(rt.path) }
        return report
    }

    /// Clears the named roots (all when empty), with progress phases; a dry run reports what would go.
    func clear(_ names: [String], dryRun: Bool = false, progress: (@Sendable (ClearProgress) -> Void)?)
        throws(WardenError) -> ClearReport
    {
        assertOnQueue(queue)
        guard running else { throw .notRunning }
        guard var evictor else { throw .readOnly }
        if dryRun { evictor = Evictor(makeDeleter: { _, _ in DryRunDeleter() }, dryRun: true) }
        var ids: [RootID] = []
        for name in names {
            guard let id = state.roots.id(named: name) else { throw .unknownDirectory(name) }
            ids.append(id)
        }
        let targets = names.isEmpty ? state.roots.order : ids
        do throws(WardenError) { try takeRequestClientLocks(targets, .clear, dryRun: dryRun) } catch {
            deliver(); throw error
        }
        backend?.suspend()
        defer { backend?.resume() }
        let (report, outcome) = clearRoots(targets, with: evictor, progress: progress)
        let lost = state.settleClientLocks(.clear, policy: nil).lost
        carried.merge(updater.restat(outcome.changed, &state))
        settle()
        deliver()
        if let lost { throw .clientLockBusy(lost) }
        return report
    }

    /// Registers another root while running: read, watched, `ready`, policies applied.
    func register(_ directory: DirectorySettings) throws(WardenError) {
        assertOnQueue(queue)
        guard running else { throw .notRunning }
        guard state.roots.id(named: directory.name) == nil else { throw .duplicateDirectory(directory.name) }
        let directory = directory.resolved()
        var candidate = state.settings
        candidate.directories.append(directory)
        do throws(ConfigError) { try candidate.validate(checkingPaths: false) } catch { throw .invalidSettings(error) }
        state.settings = candidate
        do throws(WardenError) { try addRoot(directory) } catch {
            state.settings.directories.removeLast()
            throw error
        }
        policies = PolicySet(mode == .observe ? WardenSettings() : state.settings)
        guard let id = state.roots.id(named: directory.name) else { return }
        emitReady(id)
        enforce(.startup, roots: [id])
        startTimers()
        deliver()
    }

    /// Stops watching root `name` (its `stop` line is emitted); nothing is deleted.
    func unregister(_ name: String) throws(WardenError) {
        assertOnQueue(queue)
        guard running else { throw .notRunning }
        guard let id = state.roots.id(named: name) else { throw .unknownDirectory(name) }
        if let t = state.totals(id) { state.events.emit(.stop(t)) }
        removeRoot(id)
        state.settings.directories.removeAll { $0.name == name }
        policies = PolicySet(mode == .observe ? WardenSettings() : state.settings)
        startTimers()
        deliver()
    }
}

import FoundationEssentials
