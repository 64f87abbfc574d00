/// Files open right now, as the backend saw opens and closes (`spare_open`): a sparse count per name, so only
/// open files cost memory. A file opened before the watcher started is not known to be open.
extension SizeLedger {
    mutating func noteOpened(_ r: RecordID) {
        guard isLive(r) else { return }
        openCounts[r, default: 0] &+= 1
    }

    /// A close without a known open (opened before start-up) is ignored.
    mutating func noteClosed(_ r: RecordID) {
        guard let n = openCounts[r] else { return }
        openCounts[r] = n > 1 ? n - 1 : nil
    }

    /// Whether the file is open through this name or, for a hard-linked file, through any of its names here.
    func isOpen(_ r: RecordID) -> Bool {
        if openCounts.isEmpty { return false }
        if openCounts[r] != nil { return true }
        let rec = records[r.index]
        guard rec.linked, let group = accounts[rec.root.index].links[rec.ino] else { return false }
        var open = false
        group.names.forEach { if openCounts[$0] != nil { open = true } }
        return open
    }
}
