/// What the ledger's storage takes, part by part, for the benchmark's memory breakdown (allocated capacity, not
/// just what is used: that is what a process pays for).
extension SizeLedger {
    package func memoryUse() -> [(part: String, bytes: Int)] {
        var tableSlots = 0
        for node in nodes where node.live { tableSlots += node.files.capacity + node.subdirs.capacity }
        let links = accounts.reduce(0) { $0 + $1.links.capacity }
        let inodes = accounts.reduce(0) { $0 + ($1.inodes?.capacity ?? 0) }
        return [
            ("file records", records.capacity * MemoryLayout<FileRecord>.stride),
            ("names", names.bytes.capacity),
            ("name tables", tableSlots * 4),
            ("directory nodes", nodes.capacity * MemoryLayout<DirectoryNode>.stride),
            ("victim heaps", heaps.reduce(0) { $0 + $1.capacity * 4 } + heapPositions.capacity * 4),
            ("link groups", links * (MemoryLayout<UInt64>.stride + MemoryLayout<LinkGroup>.stride)),
            ("inode index", inodes * 4),
        ]
    }
}
