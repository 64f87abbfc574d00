import Foundation
import Testing
@testable import CacheWardenLedger

/// `SizeLedger` without a filesystem: random sequences of adds, stats, renames, hard links in and out of the root,
/// subtree removals, directory moves and evictions, driven the way the ledger updater drives it, against a plain
/// dictionary model of the disk. After every step the totals, file and name counts and the oldest age must agree;
/// every 25 steps the whole oldest-first order and every file's bytes are compared.
/// `CACHEWARDEN_LEDGER_STEPS` scales it (default 2,500 steps × 8 seeds); `CACHEWARDEN_SEED` replays one seed.
@Suite struct SizeLedgerModelTests {
    /// The disk as the model sees it.
    struct Disk {
        struct Inode { var bytes: Int64; var age: Int64; var outside: Int }
        var dirs: [String: NodeID] = [:]
        var files: [String: (record: RecordID, inode: Int)] = [:]
        var inodes: [Int: Inode] = [:]
        var nextInode = 1
        /// Opens not closed yet, by name (an open counts for the file through any of its names).
        var opens: [String: Int] = [:]

        func links(_ inode: Int) -> Int {
            files.values.filter { $0.inode == inode }.count + (inodes[inode]?.outside ?? 0)
        }
        var counted: Set<Int> { Set(files.values.map(\.inode)) }
        var total: Int64 { counted.reduce(0) { $0 + (inodes[$1]?.bytes ?? 0) } }
        /// Every name, oldest first, ties by path: the order trims take victims in.
        var victimOrder: [String] {
            files.keys.sorted { a, b in
                let (x, y) = (inodes[files[a]!.inode]!.age, inodes[files[b]!.inode]!.age)
                return x != y ? x < y : Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
            }
        }
    }

    static func parent(_ path: String) -> String { path.split(separator: "/").dropLast().joined(separator: "/") }
    static func leaf(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }
    static func join(_ dir: String, _ name: String) -> String { dir.isEmpty ? name : dir + "/" + name }

    struct Driver {
        var ledger = SizeLedger()
        var disk = Disk()
        var g: ModelBasedTotalsTests.Generator
        let root = RootID(0)
        var counter = 0
        /// The names the ledger's calls returned to be statted again, not statted yet (the updater's queue).
        var toStat: [RecordID] = []

        init(seed: UInt64) {
            g = ModelBasedTotalsTests.Generator(state: seed)
            let node = ledger.addRoot(root, path: Array("/cache".utf8), ino: 1, dev: 1, ordered: true)
            disk.dirs[""] = node
        }

        mutating func fresh(_ prefix: String) -> String { counter += 1; return "\(prefix)\(counter)" }

        /// What a stat of `path` would say now.
        func status(_ path: String) -> FileStatus {
            let inode = disk.files[path]!.inode
            let i = disk.inodes[inode]!
            return FileStatus(ino: UInt64(inode), bytes: i.bytes, age: i.age, links: UInt32(disk.links(inode)))
        }

        mutating func stat(_ path: String) {
            toStat += ledger.apply(status(path), to: disk.files[path]!.record, keepOpenedAge: false)
        }

        /// Re-stats what the ledger asked for (names whose inode lost a sibling), as the updater does.
        mutating func statWhatTheLedgerAsks() {
            let asked = toStat
            toStat.removeAll()
            for r in asked where ledger.isLive(r) {
                if let path = disk.files.first(where: { $0.value.record == r })?.key { stat(path) }
            }
        }

        mutating func create(in dir: String) {
            let path = Self.joinPath(dir, fresh("f"))
            let inode = disk.nextInode
            disk.nextInode += 1
            disk.inodes[inode] = .init(bytes: Int64(g.below(100_000)), age: Int64(g.below(50)), outside: 0)
            let r = Array(SizeLedgerModelTests.leaf(path).utf8).withUnsafeBytes {
                ledger.record(in: disk.dirs[dir]!, named: $0).record
            }
            disk.files[path] = (r, inode)
            stat(path)
        }

        static func joinPath(_ dir: String, _ name: String) -> String { SizeLedgerModelTests.join(dir, name) }

        mutating func removeName(_ path: String) {
            disk.opens[path] = nil
            guard let entry = disk.files.removeValue(forKey: path) else { return }
            toStat += ledger.removeRecord(entry.record)
            statWhatTheLedgerAsks()
        }

        mutating func removeDirectory(_ dir: String) {
            for path in disk.files.keys where path.hasPrefix(dir + "/") {
                disk.files[path] = nil; disk.opens[path] = nil
            }
            toStat += ledger.removeSubtree(disk.dirs[dir]!)
            for d in disk.dirs.keys where d == dir || d.hasPrefix(dir + "/") { disk.dirs[d] = nil }
            statWhatTheLedgerAsks()
        }

        mutating func renameFile(_ from: String, to dir: String, name: String) {
            let to = Self.joinPath(dir, name)
            guard from != to, disk.dirs[to] == nil else { return }
            let entry = disk.files.removeValue(forKey: from)!
            if let replaced = disk.files.removeValue(forKey: to) { _ = replaced } // the ledger drops it in attach
            disk.opens[to] = disk.opens.removeValue(forKey: from)
            ledger.detachRecord(entry.record)
            toStat += Array(name.utf8).withUnsafeBytes {
                ledger.attachRecord(entry.record, dir: disk.dirs[dir]!, name: $0)
            }
            disk.files[to] = entry
            statWhatTheLedgerAsks()
            stat(to)
        }

        mutating func moveDirectory(_ dir: String, to parent: String, name: String) {
            let to = Self.joinPath(parent, name)
            guard !dir.isEmpty, to != dir, !(parent + "/").hasPrefix(dir + "/"), parent != dir,
                disk.files[to] == nil, disk.dirs[to] == nil
            else { return }
            let node = disk.dirs[dir]!
            ledger.detachDirectory(node)
            toStat += Array(name.utf8).withUnsafeBytes {
                ledger.attachDirectory(node, parent: disk.dirs[parent]!, name: $0)
            }
            var dirs: [String: NodeID] = [:]
            for (d, n) in disk.dirs { dirs[d == dir || d.hasPrefix(dir + "/") ? to + d.dropFirst(dir.count) : d] = n }
            disk.dirs = dirs
            var files: [String: (record: RecordID, inode: Int)] = [:]
            for (f, e) in disk.files { files[f.hasPrefix(dir + "/") ? to + f.dropFirst(dir.count) : f] = e }
            disk.files = files
            var opens: [String: Int] = [:]
            for (f, n) in disk.opens { opens[f.hasPrefix(dir + "/") ? to + f.dropFirst(dir.count) : f] = n }
            disk.opens = opens
        }

        /// The ledger's next victim must be the model's oldest name; it is removed.
        mutating func evictOldest() {
            var cursor = VictimCursor(root)
            let group = cursor.next(atLeast: 1, in: ledger)
            let expected = disk.victimOrder
            guard let first = group.first else { #expect(expected.isEmpty); return }
            let path = String(decoding: ledger.relativePath(ofRecord: first.record), as: UTF8.self)
            #expect(
                path == expected.first,
                "seed step \(counter): evicted \(path), model's oldest \(expected.first ?? "none")")
            removeName(path)
        }

        var lastOp = 0

        func openName(_ path: String) -> OpenName {
            OpenName(
                dir: disk.dirs[SizeLedgerModelTests.parent(path)]!, name: Array(SizeLedgerModelTests.leaf(path).utf8))
        }

        /// An open of `path`, or a close reported under it (kernel semantics: the name at close time).
        mutating func openOrClose(_ f: String, open: Bool) {
            if open {
                disk.opens[f, default: 0] += 1
                ledger.noteOpened(disk.files[f]!.record, as: openName(f))
            } else if let n = disk.opens[f] {
                disk.opens[f] = n > 1 ? n - 1 : nil
                ledger.noteClosed(openName(f), current: disk.files[f]!.record)
            } else if ledger.openedAs[openName(f)] == nil {
                // A close that matches no open is ignored, as for a file opened before start-up.
                ledger.noteClosed(openName(f), current: disk.files[f]!.record)
            }
        }

        mutating func step() {
            let dirs = disk.dirs.keys.sorted()
            let files = disk.files.keys.sorted()
            // While bulk loading (the initial scan) the ledger only ever sees names filed and statted.
            lastOp = ledger.account(root)?.bulkLoading == true ? g.below(6) : g.below(17)
            switch lastOp {
            case 16:
                // `ln -f other name`: the name now names another file (the stat says another inode).
                if let f = g.pick(files), let other = g.pick(files), disk.files[f]!.inode != disk.files[other]!.inode {
                    disk.files[f]!.inode = disk.files[other]!.inode
                    stat(f)
                    statWhatTheLedgerAsks()
                }
            case 14, 15: if let f = g.pick(files) { openOrClose(f, open: lastOp == 14) }
            case 0, 1, 2: create(in: g.pick(dirs)!)
            case 3:
                if let f = g.pick(files) {
                    let inode = disk.files[f]!.inode
                    // Now and then a file of 4 GiB or more (its size lives outside the 32-byte record).
                    disk.inodes[inode]!.bytes =
                        g.below(20) == 0 ? Int64(5) << 30 + Int64(g.below(1000)) : Int64(g.below(100_000))
                    disk.inodes[inode]!.age = Int64(g.below(50))
                    stat(f)
                }
            case 4:
                if let f = g.pick(files) {
                    let to = Self.joinPath(g.pick(dirs)!, fresh("h"))
                    let inode = disk.files[f]!.inode
                    let r = Array(SizeLedgerModelTests.leaf(to).utf8).withUnsafeBytes {
                        ledger.record(in: disk.dirs[SizeLedgerModelTests.parent(to)]!, named: $0).record
                    }
                    disk.files[to] = (r, inode)
                    stat(to) // only the new name is statted: the old one learns of it through the ledger
                }
            case 5: if let f = g.pick(files) { disk.inodes[disk.files[f]!.inode]!.outside += 1 }
            case 6:
                if let f = g.pick(files), disk.inodes[disk.files[f]!.inode]!.outside > 0 {
                    disk.inodes[disk.files[f]!.inode]!.outside -= 1
                    if g.below(2) == 0 { stat(f) }
                }
            case 7: if let f = g.pick(files) { removeName(f) }
            case 8:
                if let f = g.pick(files) {
                    let name =
                        g.below(4) == 0 ? (g.pick(files).map(SizeLedgerModelTests.leaf) ?? fresh("r")) : fresh("r")
                    renameFile(f, to: g.pick(dirs)!, name: name)
                }
            case 9:
                let parent = g.pick(dirs)!
                let name = fresh("d")
                let added = Array(name.utf8).withUnsafeBytes {
                    ledger.addDirectory(parent: disk.dirs[parent]!, name: $0, ino: UInt64(1_000_000 + counter))
                }
                toStat += added.stale
                disk.dirs[Self.joinPath(parent, name)] = added.node
            case 10: if let d = g.pick(dirs.filter { !$0.isEmpty }) { removeDirectory(d) }
            case 11:
                if let d = g.pick(dirs.filter { !$0.isEmpty }) { moveDirectory(d, to: g.pick(dirs)!, name: fresh("m")) }
            case 12: evictOldest()
            default: _ = ledger.settle()
            }
        }

        /// The heap's own invariants: positions agree (and no record outside it has one), parents are older than
        /// children or as old with a lower record ID, every name is in it.
        func checkHeap(_ step: Int, seed: UInt64) {
            let heap = ledger.victims(root)
            for (k, r) in heap.enumerated() {
                #expect(ledger.heapPositions[r.index] == UInt32(k), "seed \(seed) step \(step): position of \(r)")
                if k > 0 {
                    let (parent, age, parentAge) = (
                        heap[(k - 1) / 2], ledger.victimAge(r), ledger.victimAge(heap[(k - 1) / 2])
                    )
                    #expect(
                        parentAge < age || (parentAge == age && parent.raw < r.raw),
                        "seed \(seed) step \(step) op \(lastOp): heap order at \(k)")
                }
            }
            let members = Set(heap)
            for (k, position) in ledger.heapPositions.enumerated() where !members.contains(RecordID(UInt32(k))) {
                #expect(position == SizeLedger.notInHeap, "seed \(seed) step \(step) op \(lastOp): record \(k)")
            }
            #expect(
                members == Set(disk.files.values.map(\.record)),
                "seed \(seed) step \(step) op \(lastOp): heap members \(heap.count) vs \(disk.files.count)")
        }

        func checkTotals(_ step: Int, seed: UInt64) {
            let account = ledger.account(root)!
            #expect(
                account.total == disk.total, "seed \(seed) step \(step): total \(account.total) ≠ model \(disk.total)")
            #expect(account.files == disk.counted.count, "seed \(seed) step \(step): files")
            #expect(account.names == disk.files.count, "seed \(seed) step \(step): names")
            let oldest = disk.files.values.map { disk.inodes[$0.inode]!.age }.min()
            #expect(ledger.oldestAge(root) == oldest, "seed \(seed) step \(step): oldest age")
        }

        /// The whole victim order (walked by a cursor, which leaves the heap as it is), every file's bytes and whether
        /// it is open.
        mutating func checkOrder(_ step: Int, seed: UInt64) {
            for (path, entry) in disk.files {
                let open = disk.files.contains { $0.value.inode == entry.inode && disk.opens[$0.key] != nil }
                #expect(ledger.isOpen(entry.record) == open, "seed \(seed) step \(step): \(path) open")
                #expect(
                    ledger.inode(ofRecord: entry.record)?.bytes == disk.inodes[entry.inode]!.bytes,
                    "seed \(seed) step \(step): \(path)")
                #expect(String(decoding: ledger.relativePath(ofRecord: entry.record), as: UTF8.self) == path)
            }
            var order: [String] = []
            var cursor = VictimCursor(root)
            while case let group = cursor.next(atLeast: 1, in: ledger), !group.isEmpty {
                for e in group {
                    order.append(String(decoding: ledger.relativePath(ofRecord: e.record), as: UTF8.self))
                }
            }
            #expect(order == disk.victimOrder, "seed \(seed) step \(step): victim order")
            ledger.compactNames()
        }
    }

    @Test func randomOperationsKeepTheLedgerEqualToADictionaryModel() {
        let env = ProcessInfo.processInfo.environment
        let steps = Int(env["CACHEWARDEN_LEDGER_STEPS"] ?? "") ?? 2500
        let seeds = env["CACHEWARDEN_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...8)
        for seed in seeds {
            var driver = Driver(seed: seed)
            // The first steps run as the initial scan does (bulk loading): order and hard-link merging are
            // settled once, at its end.
            let bulkSteps = 150
            driver.ledger.beginBulkLoad(driver.root)
            for step in 1...steps {
                driver.step()
                if step == bulkSteps { driver.ledger.endBulkLoad(driver.root) }
                guard step >= bulkSteps else { continue }
                driver.checkHeap(step, seed: seed)
                driver.checkTotals(step, seed: seed)
                if step % 25 == 0 { driver.checkOrder(step, seed: seed) }
            }
        }
    }
}
