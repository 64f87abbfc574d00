/// Closes that arrive ahead of the rename they depend on. Opens and closes are read from their own inotify
/// instance after the main one, so a batch can hold `close(x)` for a file whose `x.tmp → x` rename is still
/// queued in the main instance: no file is named `x` yet, and the open counted under `x.tmp` would stay open for
/// good (and the file spared from every trim). Such a close is tried once more at the end of the next batch,
/// once the main instance has caught up; if it still matches nothing it was a close of a file opened before
/// start-up, and is dropped.
extension LedgerUpdater {
    mutating func retryCloses(_ state: inout PipelineState) {
        for key in deferredCloses where state.ledger.isLive(key.dir) {
            let current = key.name.withUnsafeBytes { state.ledger.existingRecord(in: key.dir, named: $0) }
            state.ledger.noteClosed(key, current: current)
        }
        deferredCloses = unmatchedCloses
        unmatchedCloses.removeAll()
    }
}
