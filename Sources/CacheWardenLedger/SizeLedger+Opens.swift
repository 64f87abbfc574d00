/// The name an open or a close was reported under: the directory and the entry's name at that moment.
package struct OpenName: Hashable {
    package var dir: NodeID
    package var name: [UInt8]

    package init(dir: NodeID, name: [UInt8]) {
        self.dir = dir
        self.name = name
    }
}

/// Files open right now, as the backend saw opens and closes (`spare_open`): a sparse count per name, so only
/// open files cost memory. A file opened before the watcher started is not known to be open.
///
/// Opens and closes come from their own inotify instance (`InotifyOpens`), so they are not ordered with the
/// creates and renames that the totals follow: a client that opens `x.tmp`, renames it to `x` and closes it
/// reports the close under `x` (the name at close time), while a close of `x.tmp` read after its rename finds no
/// file of that name any more. So each counted open remembers the name it came under (`openedAs`), and a close is
/// matched first to the file that its name names now, if that file has an open counted, and else to the oldest
/// open counted under that name. Either way one open of one file ends. A close that matches nothing may be ahead
/// of the rename that gave the file that name: the updater tries it once more after the next batch.
extension SizeLedger {
    package mutating func noteOpened(_ r: RecordID, as name: OpenName) {
        guard isLive(r) else { return }
        let n = openCounts[r, default: 0]
        guard n < UInt16.max else { return }
        openCounts[r] = n + 1
        openedAs[name, default: []].append(r)
    }

    /// `current` is the file the name names now, if any. A close that matches no counted open (the file was
    /// opened before start-up, its open was lost, or the rename that gave it this name is not applied yet)
    /// changes nothing and returns false.
    @discardableResult
    package mutating func noteClosed(_ name: OpenName, current: RecordID?) -> Bool {
        if let current, openCounts[current] != nil {
            if var list = openedAs[name], let k = list.firstIndex(of: current) {
                list.remove(at: k)
                openedAs[name] = list.isEmpty ? nil : list
            } else {
                dropOpenedAs(current, all: false)
            }
            decrementOpens(current)
            return true
        }
        guard var list = openedAs[name], !list.isEmpty else { return false }
        let r = list.removeFirst()
        openedAs[name] = list.isEmpty ? nil : list
        decrementOpens(r)
        return true
    }

    private mutating func decrementOpens(_ r: RecordID) {
        guard let n = openCounts[r] else { return }
        openCounts[r] = n > 1 ? n - 1 : nil
    }

    /// Removes one (or every) remembered open of `r`, whatever name it came under. Linear in the open files.
    mutating func dropOpenedAs(_ r: RecordID, all: Bool) {
        for (name, var list) in openedAs where list.contains(r) {
            if all { list.removeAll { $0 == r } } else { list.remove(at: list.firstIndex(of: r)!) }
            openedAs[name] = list.isEmpty ? nil : list
            if !all { return }
        }
    }

    /// The opens and closes in flight were lost: no file is known to be open any more (until its next open).
    package mutating func forgetOpens() {
        openCounts.removeAll()
        openedAs.removeAll()
    }

    /// Whether the file is open through this name or, for a hard-linked file, through any of its names here.
    package func isOpen(_ r: RecordID) -> Bool {
        if openCounts.isEmpty { return false }
        if openCounts[r] != nil { return true }
        let rec = records[r.index]
        guard rec.linked, let group = accounts[rec.root.index].links[rec.ino] else { return false }
        var open = false
        group.names.forEach { if openCounts[$0] != nil { open = true } }
        return open
    }
}
