/// Recovery when the kernel's queue overflowed (`IN_Q_OVERFLOW`): events were lost, so the running totals cannot
/// be trusted. Every root is re-read from disk (its watches are kept: re-adding a watch returns the same
/// descriptor), the ledgers are replaced, and a `rescan` line per directory reports the drift.
extension Engine {
    func recoverFromOverflow() {
        overflowSeen = false
        emit(.overflow)
        pendingMoves.removeAll()
        appearedRetry.removeAll()
        unreadNodes.removeAll()
        dirty.removeAll()
        dirtyOrder.removeAll()
        for id in rootOrder {
            guard let rt = roots[id], !rt.lost, let old = ledger.accounts[id] else { continue }
            var dropped: [Int32] = []
            ledger.removeRoot(id, droppedWatches: &dropped)
            dropWatches(dropped, remove: false)
            do throws(WardenError) {
                try scanRoot(id)
            } catch {
                rootLost(id, why: error.description)
                continue
            }
            // Watches of directories that are no longer in the tree (moved out while events were lost).
            for wd in dropped where wdToNode[wd] == nil { inotify?.removeWatch(wd) }
            let new = ledger.accounts[id]!
            emit(.rescan(RescanReport(dir: rt.settings.name, drift: old.total - new.total, total: new.total, files: new.files)))
            touchedRoots.insert(id)
        }
    }
}
