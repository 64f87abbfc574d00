/// How `discover` proposes quotas. A cache's size today is the best evidence of what its tool needs (its working
/// set plus what has gone stale), so each quota leaves room to grow — `growth` times today's size — without
/// letting one cache take more than `cacheShare` of its filesystem, and never below `floor` (trimming a small cache
/// frees nothing worth the misses it causes). All of a user's caches share one group budget: the sum of their
/// quotas, but no more than `groupShare` of the filesystem, so that together they cannot fill the disk either.
/// Sizes are rounded to whole `step`s (up for a quota, down for a cap) so the file reads as a person would write it.
package struct QuotaRule: Sendable, Equatable {
    package var growth: Double = 1.5
    package var floor: Int64 = 1 << 30
    package var cacheShare: Double = 0.10
    package var groupShare: Double = 0.25
    package var step: Int64 = 64 << 20

    package init() {}

    /// The quota proposed for a cache of `size` bytes on a filesystem of `filesystem` bytes.
    package func quota(size: Int64, filesystem: Int64) -> Int64 {
        let cap = self.cap(filesystem, share: cacheShare)
        let wanted = roundUp(Int64((Double(size) * growth).rounded(.up)))
        return min(cap, max(min(floor, cap), wanted))
    }

    /// The budget proposed for the group of all caches with `quotas`, on a filesystem of `filesystem` bytes.
    package func groupBudget(quotas: [Int64], filesystem: Int64) -> Int64 {
        min(quotas.reduce(0, +), cap(filesystem, share: groupShare))
    }

    /// `share` of the filesystem rounded down to a step (at least one step).
    private func cap(_ filesystem: Int64, share: Double) -> Int64 {
        max(step, Int64(Double(filesystem) * share) / step * step)
    }

    private func roundUp(_ bytes: Int64) -> Int64 { max(step, (bytes + step - 1) / step * step) }
}
