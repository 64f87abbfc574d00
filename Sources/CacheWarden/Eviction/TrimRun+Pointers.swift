/// Pointers into units (`evict_pointers`; uv's profile sets it). A client that keeps its entries in one place and
/// points at them from another must never be left holding a pointer to a unit a trim deleted. uv 0.13 unpacks a
/// wheel into `archive-v0/<id>/` and points at it from `wheels-v8/…/<wheel>` (a symlink) with `<wheel>.rev` or
/// `<wheel>.http` beside it naming the same archive; for a wheel from a `--find-links` folder or a local path it
/// follows the `.rev` without looking, and an archive gone under it fails the install (`failed to read directory
/// archive-v0/<id>`), while a pointer gone is a clean miss (the wheel is unpacked again). uv's own `cache prune`
/// removes only archives no symlink points to. So a unit goes with its pointers, pointers first: every symlink in
/// the root that leads into the unit from outside it, and the files beside each named after it with an extension
/// (the client's record of the link), unless protected. The unit's age is the newest of its own files' and its
/// pointers' (a hit reads the pointer, not the archive); anything spared among them keeps it whole.
extension TrimRun {
    /// A symlink leading into a unit, and its companions' records (to be deleted before the unit goes).
    struct Pointer {
        var dir: NodeID
        var name: [UInt8]
        var target: [UInt8]
        var companions: [RecordID]
    }

    /// Finds the symlinks of the root that lead into one of `units` (keyed by their folders) and adds them, with
    /// their companions' ages, bytes and reasons to be spared, to the unit they lead into.
    mutating func attachPointers(to units: inout [NodeID: Unit], depth: Int, _ state: PipelineState) {
        guard let account = state.ledger.account(root), !units.isEmpty else { return }
        var byPath: [[UInt8]: NodeID] = [:]
        for (node, unit) in units { byPath[unit.path] = node }
        for link in UnitLinks.find(under: account.rootNode, root: root, state.ledger) {
            let base = state.ledger.relativePath(of: link.dir)
            guard let parts = UnitLinks.resolve(link.target, from: base, rootPath: account.path), parts.count >= depth else { continue }
            let unitPath = Array(parts.prefix(depth).joined(separator: [PathBytes.separator]))
            guard let node = byPath[unitPath], var unit = units[node] else { continue }
            let chain = state.ledger.chain(of: link.dir)
            if chain.count >= depth && chain[depth - 1] == node { continue }   // inside the unit: goes with it
            var pointer = Pointer(dir: link.dir, name: link.name, target: link.target, companions: [])
            for name in link.companions {
                guard let r = name.withUnsafeBytes({ state.ledger.existingRecord(in: link.dir, named: $0) }),
                      state.ledger.isLive(r), let inode = state.ledger.inode(ofRecord: r) else { continue }
                if runtime.protect.matches(base + [PathBytes.separator] + name) { continue }   // stays (uv's `.lock`)
                let age = state.ledger.victimAge(r)
                let inUse = goal.target != .everything && isInUse(r, state)
                let spare = spareReason(r, age: age, state) ?? (inUse ? .inUse : nil)
                if unit.spared == nil { unit.spared = spare }
                unit.age = max(unit.age, age)
                unit.bytes += inode.names <= 1 ? inode.bytes : 0
                pointer.companions.append(r)
            }
            unit.pointers.append(pointer)
            units[node] = unit
        }
    }

    /// Deletes a unit's pointers, each one's companions first and then the link. Returns the companion files
    /// deleted, or nil when one was refused: the unit then stays (what went of its pointers is a clean miss for
    /// the client; nothing left points at anything deleted).
    mutating func deletePointers(of unit: Unit, _ state: inout PipelineState) -> Int? {
        var deleted = 0
        for pointer in unit.pointers {
            for r in pointer.companions where state.ledger.isLive(r) {
                switch deleter.delete(r, in: state.ledger, checkingAge: goal.target != .everything) {
                case .removed: state.ledger.removeRecord(r); deleted += 1
                case .simulated: deleted += 1
                case .vanished: continue
                case .changed: changed.append(r); return nil
                case .failed(let errno):
                    state.events.error("cannot delete: \(errno)", dir: runtime.name, file: displayPath(r, state.ledger), kind: "delete")
                    return nil
                }
            }
            // A link that now leads elsewhere is no pointer into this unit any more.
            if case .failed(let errno) = deleter.deleteLink(pointer.name, in: pointer.dir, target: pointer.target, in: state.ledger) {
                let path = state.ledger.relativePath(of: pointer.dir) + [PathBytes.separator] + pointer.name
                state.events.error("cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(path), kind: "delete")
                return nil
            }
        }
        return deleted
    }
}
