import CacheWardenLedger
import SystemPackage

/// Eviction units (`evict_unit = entry | depth:N`): the children of the root at depth N — a package-version
/// folder, a per-job build folder, a model snapshot — are deleted whole, oldest unit first. A unit's age is the
/// newest age inside it and its size the sum; a file shallower than N is a unit of its own. A unit with anything
/// spared in it (protected, in use, too young, vetoed) is skipped whole: a trim never deletes half a folder.
extension TrimRun {
    /// One unit: a directory at depth N with everything in it, or a file.
    struct Unit {
        var node: NodeID?
        var files: [RecordID] = []
        var path: [UInt8]
        var age: Int64 = .min
        var bytes: Int64 = 0
        var spared: SpareReason?
        /// With `evict_pointers`: the symlinks elsewhere in the root that lead into it (`TrimRun+Pointers`).
        var pointers: [Pointer] = []
    }

    mutating func evictOldestUnits(depth: Int, _ ledger: SizeLedger, _ events: inout EventOutbox) {
        while evictNextUnit(depth: depth, ledger, &events) {}
    }

    /// The next victim of a trim taking turns between members (a group's, a low-disk purge's): a whole unit with
    /// `evict_unit`, else a file.
    mutating func evictNextVictim(_ ledger: SizeLedger, _ events: inout EventOutbox) -> Bool {
        if case .depth(let depth) = runtime.settings.evictUnit, goal.target != .everything {
            return evictNextUnit(depth: depth, ledger, &events)
        }
        return evictNext(ledger, &events)
    }

    /// Deletes the next unit, oldest first, whole or not at all; the units are collected and sorted at the first
    /// call. Returns false when the target is met, the pass's limit is reached, or no unit is left.
    mutating func evictNextUnit(depth: Int, _ ledger: SizeLedger, _ events: inout EventOutbox) -> Bool {
        if unitQueue == nil {
            unitQueue = collectUnits(depth: depth, ledger, &events).sorted {
                $0.age != $1.age ? $0.age < $1.age : $0.path.lexicographicallyPrecedes($1.path)
            }
        }
        while !lockLost, let units = unitQueue, unitIndex < units.count {
            let unit = units[unitIndex]
            guard wants(age: unit.age) else { return false }
            if let limit = goal.limit, removed >= limit { paced = true; return false }
            unitIndex += 1
            if let reason = unit.spared { spared.count(reason); continue }
            guard vetoAllows(unit, ledger) else {
                spared.vetoed += 1
                continue
            }
            let before = removed
            evictUnit(unit, ledger, &events)
            if removed > before { return true }
        }
        return false
    }

    /// One pass over the root's files, grouping them into units.
    private mutating func collectUnits(depth: Int, _ ledger: SizeLedger, _ events: inout EventOutbox) -> [Unit] {
        guard let top = ledger.account(root)?.rootNode else { return [] }
        var byNode: [NodeID: Unit] = [:]
        var loose: [Unit] = []
        var records: [RecordID] = []
        ledger.forEachRecord(under: top) { records.append($0) }
        for r in records where !pending.contains(r) {
            guard let inode = ledger.inode(ofRecord: r) else { continue }
            let chain = ledger.chain(of: ledger.record(r).dir)
            let age = ledger.victimAge(r)
            // A clear takes open files too: a unit with one is not skipped, to be cleared file by file after.
            let inUse = goal.target != .everything && isInUse(r, ledger)
            let spare = spareReason(r, age: age, ledger, insideUnit: chain.count >= depth) ?? (inUse ? .inUse : nil)
            let bytes = inode.names <= 1 ? inode.bytes : 0 // a linked file frees its bytes only with its last name
            if chain.count >= depth {
                let node = chain[depth - 1]
                var unit = byNode[node] ?? Unit(node: node, path: ledger.relativePath(of: node))
                unit.files.append(r)
                unit.age = max(unit.age, age)
                unit.bytes += bytes
                unit.spared = unit.spared ?? spare
                byNode[node] = unit
            } else {
                loose.append(Unit(files: [r], path: relativePath(r, ledger), age: age, bytes: bytes, spared: spare))
            }
        }
        attachPointers(to: &byNode, depth: depth, ledger, &events)
        return Array(byNode.values) + loose
    }

    /// The veto hook (`shouldEvict`) is asked for the unit, then for each of its pointers' files and links
    /// (`evict_pointers`): any one refused keeps the unit.
    private mutating func vetoAllows(_ unit: Unit, _ ledger: SizeLedger) -> Bool {
        guard let veto = runtime.settings.shouldEvict else { return true }
        let dir = runtime.name, reason = goal.reason
        func allows(_ path: [UInt8], _ size: Int64) -> Bool {
            veto(EvictionCandidate(directory: dir, file: PathBytes.display(path), size: size, reason: reason))
        }
        guard allows(unit.path, unit.bytes) else { return false }
        for pointer in unit.pointers {
            for r in pointer.companions where !pending.contains(r) {
                guard allows(relativePath(r, ledger), pending.freedBytes(ofRecord: r, in: ledger)) else { return false }
            }
            guard allows(PathBytes.join(ledger.relativePath(of: pointer.link.dir), pointer.link.name), 0) else {
                return false
            }
        }
        return true
    }

    /// Takes the unit out of its client's view in one rename into the root's trash and deletes it there
    /// (`FileDeleter.evictUnit`); where that rename cannot be had, deletes it file by file (one `error` line of
    /// kind `unit_not_atomic` says so). Its pointers (`evict_pointers`) go first, each file and link with an `evict`
    /// line of its own. Reported as one `evict` line once it is gone from the client's view, with what was deleted
    /// of it and how many links went. The deleter brackets it (`beginUnit`, `endUnit`): the client's locks of the
    /// root and of the unit are taken or looked at again before anything of it goes.
    private mutating func evictUnit(_ unit: Unit, _ ledger: SizeLedger, _ events: inout EventOutbox) {
        defer { deleter.endUnit() }
        if let refused = deleter.beginUnit(unit.path) { noteLockRefusal(refused); return }
        var unit = unit
        // A unit's file may have gone already in this trim as another unit's pointer (`evict_pointers`).
        unit.files.removeAll { pending.contains($0) }
        guard checkWhole(unit, ledger, &events) else { return }
        // Its pointers go first: at no moment does one lead to a unit that is gone.
        var gone = PointersGone()
        let deleted =
            deletePointers(of: unit, &gone, ledger, &events)
            ? deleteUnit(unit, ledger, &events) : (files: 0, bytes: Int64(0))
        guard deleted.files > 0 || !gone.entries.isEmpty else { return }
        // Every pointer file and link that went has its line, in the order they went (also when the unit then
        // stayed: it changed meanwhile); the unit's line comes last.
        for entry in gone.entries { report(entry.path, bytes: entry.bytes, files: nil, pointers: nil, &events) }
        guard deleted.files > 0 else { return }
        report(
            unit.path, bytes: deleted.bytes, files: unit.node == nil ? nil : deleted.files,
            pointers: gone.links > 0 ? gone.links : nil, &events)
    }

    private mutating func report(
        _ path: [UInt8], bytes: Int64, files: Int?, pointers: Int?, _ events: inout EventOutbox
    ) {
        removed += 1
        events.emit(
            .evict(
                Eviction(
                    dir: runtime.name, file: PathBytes.display(path), size: bytes, reason: goal.reason,
                    dryRun: dryRun, files: files, pointers: pointers)))
        progress?(removed, before - projected, &events)
    }

    /// The read-only look before anything of a unit goes: every file of it and of its pointers still the one
    /// counted (one replaced or rewritten since keeps the whole unit: it is statted again, rather than half of it
    /// left); with pointers, each link still the one read and the unit's folder holding its counted files only.
    private mutating func checkWhole(_ unit: Unit, _ ledger: SizeLedger, _ events: inout EventOutbox) -> Bool {
        let checkingAge = goal.target != .everything // a clear takes everything: identity only
        for r in unit.files + unit.pointers.flatMap(\.companions) where !pending.contains(r) {
            guard let refused = deleter.check(r, in: ledger, checkingAge: checkingAge), refused != .vanished
            else { continue }
            if refused == .changed { changed.append(r) }
            noteLockRefusal(refused)
            if case .failed(let errno) = refused {
                events.error(
                    "cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(relativePath(r, ledger)),
                    kind: "delete")
            }
            return false
        }
        guard !unit.pointers.isEmpty else { return true }
        guard checkLinks(of: unit, ledger, &events) else { return false }
        if let node = unit.node, let refused = deleter.surveyUnit(node, files: unit.files, in: ledger) {
            if case .kept(let why) = refused { noteKept(why, unit, &events) } else { changed += unit.files }
            return false
        }
        return true
    }

    /// The unit itself, once its pointers went: the files deleted and the bytes that freed (no files: it stays).
    private mutating func deleteUnit(_ unit: Unit, _ ledger: SizeLedger, _ events: inout EventOutbox)
        -> (files: Int, bytes: Int64)
    {
        guard let node = unit.node else { return deleteFileByFile(unit, ledger, &events) }
        switch deleter.evictUnit(node, files: unit.files, in: ledger) {
        case .moved, .simulated:
            // The whole folder went (a dry run's clear does not take its files again): what that freed, the
            // bytes of names linked to each other inside it too.
            return (unit.files.count, pending.removeFolder(node, in: ledger).bytes)
        case .changed: changed += unit.files; return (0, 0)
        case .lockLost: noteLockRefusal(.lockLost); return (0, 0)
        case .lockHeld: noteLockRefusal(.lockHeld); return (0, 0)
        case .lockUnusable: return (0, 0)
        case .failed(let errno):
            events.error(
                "cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(unit.path), kind: "delete")
            return (0, 0)
        case .notAtomic(let errno):
            noteNotAtomic(errno, unit, &events)
            return deleteFileByFile(unit, ledger, &events)
        case .kept(let why): noteKept(why, unit, &events); return (0, 0)
        }
    }

    /// A unit that cannot leave whole stays, said at each trim that comes to it (it stays until its client or an
    /// operator changes what it holds).
    private func noteKept(_ why: String, _ unit: Unit, _ events: inout EventOutbox) {
        events.error(
            "unit kept: \(why)", dir: runtime.name, file: PathBytes.display(unit.path), kind: "unit_kept")
    }

    /// Said once per root: the root remembers it (`RootRuntime.renameRefused`, handed on at the end of the trim)
    /// and its later trims go file by file at once.
    private mutating func noteNotAtomic(_ errno: Errno, _ unit: Unit, _ events: inout EventOutbox) {
        guard runtime.renameRefused == nil, renameRefused == nil else { return }
        renameRefused = errno
        events.error(
            "a unit cannot be moved out of its client's view in one step here (\(errno)); "
                + "deleting units file by file", dir: runtime.name, file: PathBytes.display(unit.path),
            kind: "unit_not_atomic")
    }

    /// The unit's files one by one, then its emptied folders bottom-up (the unit's own included); returns the
    /// files deleted and the bytes that freed. A client's lock that no longer stands stops it: the rest stays.
    private mutating func deleteFileByFile(_ unit: Unit, _ ledger: SizeLedger, _ events: inout EventOutbox)
        -> (files: Int, bytes: Int64)
    {
        var deleted = (files: 0, bytes: Int64(0))
        files: for r in unit.files {
            let outcome = deleter.delete(r, in: ledger, checkingAge: true)
            switch outcome {
            case .removed, .simulated: deleted.files += 1; deleted.bytes += pending.removeFile(r, in: ledger)
            case .vanished: continue
            case .changed: changed.append(r)
            case .lockLost, .lockHeld, .lockUnusable: noteLockRefusal(outcome); break files
            case .failed(let errno):
                events.error(
                    "cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(unit.path), kind: "delete")
            }
        }
        if let node = unit.node, !dryRun {
            var nodes: [NodeID] = []
            ledger.forEachNode(under: node) { nodes.append($0) }
            // Deepest first: a folder whose every file and folder went is empty on disk now.
            for n in nodes.reversed() where !pending.contains(node: n) && pending.isEmptied(n, in: ledger) {
                if deleter.deleteEmptyDirectory(n, in: ledger, withSymlinks: true) {
                    pending.removeFolder(n, in: ledger)
                }
            }
        }
        return deleted
    }
}
