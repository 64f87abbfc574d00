import Dispatch
import Foundation

/// When each policy runs: quotas at the end of every batch that changed a root, age expiry at start-up and on a
/// timer, low-disk checks after writes (at most once a second) and on a timer. No timer runs unless a policy
/// needs it, so an idle watcher without `max_age`/`low_disk_free` never wakes up.
extension Engine {
    /// End of a batch: trim every changed root that is over its quota, then check free space.
    func enforcePolicies() {
        let touched = touchedRoots
        touchedRoots.removeAll(keepingCapacity: true)
        for id in touched { enforceQuota(id) }
        if !touched.isEmpty { checkLowDisk(force: false) }
    }

    func enforceQuota(_ id: Int32) {
        guard let rt = roots[id], rt.settings.quota > 0, let account = ledger.accounts[id],
              account.total > rt.settings.quota else { return }
        trim(id, reason: .quota, goal: TrimGoal(target: rt.settings.quota / 2))
    }

    /// After the initial scan: expire old files, then bring the directory under its quota.
    func runStartupPolicies(_ id: Int32) {
        expire(id)
        enforceQuota(id)
    }

    /// Removes the files of a root whose age key is older than its `maxAge`.
    func expire(_ id: Int32) {
        guard let rt = roots[id], let maxAge = rt.settings.maxAge else { return }
        let cutoff = Engine.nowNanoseconds() - maxAge * 1_000_000_000
        guard let oldest = ledger.accounts[id]?.heap.min, oldest.age < cutoff else { return }
        trim(id, reason: .age, goal: TrimGoal(olderThan: cutoff))
    }

    /// Seconds between expiry passes of a root: the configured interval, or a tenth of `maxAge` (1 s…1 h).
    func expiryInterval(_ maxAge: Int64) -> Int64 {
        settings.expireInterval ?? min(3600, max(1, maxAge / 10))
    }

    func startTimers() {
        for t in timers { t.cancel() }
        timers.removeAll()
        let ages = rootOrder.compactMap { roots[$0]?.settings.maxAge }
        if let shortest = ages.min() {
            addTimer(every: expiryInterval(shortest)) { engine in
                for id in engine.rootOrder { engine.expire(id) }
            }
        }
        if lowDiskEnabled {
            addTimer(every: max(1, settings.lowDiskInterval)) { engine in engine.checkLowDisk(force: true) }
        }
    }

    private func addTimer(every seconds: Int64, _ body: @escaping @Sendable (Engine) -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .seconds(Int(seconds)), repeating: .seconds(Int(seconds)), leeway: .milliseconds(100))
        timer.setEventHandler { @Sendable [unowned self] in
            guard self.running else { return }
            body(self)
            self.deliver()
        }
        timer.resume()
        timers.append(timer)
    }
}
