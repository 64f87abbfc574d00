import CacheWardenLedger
import SystemPackage

/// Pointers into units (`evict_pointers`; uv's profile sets it). A client that keeps its entries in one place and
/// points at them from another must never be left holding a pointer to a unit a trim deleted. uv 0.13 unpacks a
/// wheel into `archive-v0/<id>/` and points at it from `wheels-v8/…/<wheel>` (a symlink) with `<wheel>.rev` or
/// `<wheel>.http` beside it naming the same archive; for a wheel from a `--find-links` folder or a local path it
/// follows the `.rev` without looking, and an archive gone under it fails the install (`failed to read directory
/// archive-v0/<id>`), while a pointer gone is a clean miss (the wheel is unpacked again). uv's own `cache prune`
/// removes only archives no symlink points to. So a unit goes with its pointers, pointers first: every symlink in
/// the folders the key names that leads into (or through) the unit from outside it, and its companions, the files
/// beside it named after it (`UnitLinks`). The unit's age is the newest of its own files' and its companions' (a
/// hit reads the pointer, not the archive).
///
/// Uncertainty keeps the unit: a companion not counted (just written, excluded), protected or vetoed, a link
/// protected, excluded or vetoed, anything spared among them; every unit of the trim when a folder or a link
/// cannot be read (one `error` line of kind `pointers` says what). Before any pointer goes, the unit's own files
/// and its companions are checked, each link is checked to be the one read, and the unit's folder is surveyed
/// (`FileDeleter.surveyUnit`): a unit that cannot go keeps its pointers.
extension TrimRun {
    /// A symlink leading into a unit, and its companions' records (to be deleted before the unit goes).
    struct Pointer {
        var link: PointerLink
        var companions: [RecordID]
    }

    /// What went of a unit's pointers, in the order it went: each file (the bytes it freed) and each link (none),
    /// by path; each gets an `evict` line of its own.
    struct PointersGone {
        var entries: [(path: [UInt8], bytes: Int64, link: Bool)] = []
        var files: Int { entries.count - links }
        var links: Int { entries.reduce(0) { $0 + ($1.link ? 1 : 0) } }
        var bytes: Int64 { entries.reduce(0) { $0 + $1.bytes } }
    }

    /// Finds the symlinks in the root's pointer folders that lead into one of `units` (keyed by their folders) and
    /// adds them, with their companions' ages, bytes and reasons to be spared, to each unit they lead into.
    mutating func attachPointers(
        to units: inout [NodeID: Unit], depth: Int, _ ledger: SizeLedger, _ events: inout EventOutbox
    ) {
        let settings = runtime.settings
        guard !settings.evictPointers.isEmpty, !units.isEmpty, ledger.account(root) != nil else { return }
        var links = UnitLinks(
            PointerResolver(root: root, configuredPath: settings.path, ledger), extensions: settings.pointerExtensions)
        defer { links.close() }
        links.scan(folders: settings.evictPointers, ledger)
        var problem = links.problem
        for found in links.found where problem == nil {
            switch links.resolver.resolve(found.link.target, from: found.link.dir, depth: depth, ledger) {
            case .uncertain(let why): problem = why
            case .units(let nodes):
                // A link inside a unit goes with it: it is no pointer of its own unit.
                let own = ledger.chain(of: found.link.dir).dropFirst(depth - 1).first
                for node in nodes where node != own {
                    guard var unit = units[node] else { continue }
                    attach(found, to: &unit, ledger)
                    units[node] = unit
                }
            }
        }
        guard let problem else { return }
        for node in Array(units.keys) where units[node]?.spared == nil { units[node]?.spared = .protected }
        events.error(
            "\(problem): no unit goes in this trim, as a pointer into it might stay", dir: runtime.name,
            kind: "pointers")
    }

    private mutating func attach(_ found: UnitLinks.Found, to unit: inout Unit, _ ledger: SizeLedger) {
        let folder = ledger.relativePath(of: found.link.dir)
        let linkPath = PathBytes.join(folder, found.link.name)
        // A link the user protects or excludes keeps what it points at.
        if runtime.protect.matches(linkPath) || runtime.exclude.matches(linkPath) {
            unit.spared = unit.spared ?? .protected
        }
        var pointer = Pointer(link: found.link, companions: [])
        for name in found.companions {
            guard let r = name.withUnsafeBytes({ ledger.existingRecord(in: found.link.dir, named: $0) }),
                !pending.contains(r), let inode = ledger.inode(ofRecord: r)
            else {
                // Not counted (excluded, or not statted yet): it can be neither checked nor left behind.
                unit.spared =
                    unit.spared ?? (runtime.exclude.matches(PathBytes.join(folder, name)) ? .protected : .young)
                continue
            }
            let age = ledger.victimAge(r)
            let inUse = goal.target != .everything && isInUse(r, ledger)
            // A protected pointer file keeps its unit (where the profile lists its pointer files, the others,
            // such as uv's `.lock`, are no companions at all).
            unit.spared = unit.spared ?? spareReason(r, age: age, ledger) ?? (inUse ? .inUse : nil)
            unit.age = max(unit.age, age)
            unit.bytes += inode.names <= 1 ? inode.bytes : 0
            pointer.companions.append(r)
        }
        unit.pointers.append(pointer)
    }

    /// The read-only look at a unit's pointers before anything of it goes: each link still the one read (one
    /// replaced, or that cannot be looked at, keeps the unit).
    mutating func checkLinks(of unit: Unit, _ ledger: SizeLedger, _ events: inout EventOutbox) -> Bool {
        for pointer in unit.pointers where !pending.contains(node: pointer.link.dir) {
            switch deleter.checkLink(pointer.link, in: ledger) {
            case nil, .vanished?: continue
            case .failed(let errno)?: reportFailure(errno, pointer.link, ledger, &events); return false
            case let refused?: noteLockRefusal(refused); return false
            }
        }
        return true
    }

    /// Deletes a unit's pointers, each one's companions first and then the link; false when one was refused: the
    /// unit then stays (what went of its pointers is a clean miss for the client; nothing left points at
    /// anything deleted).
    mutating func deletePointers(
        of unit: Unit, _ gone: inout PointersGone, _ ledger: SizeLedger, _ events: inout EventOutbox
    ) -> Bool {
        let checkingAge = goal.target != .everything
        for pointer in unit.pointers {
            for r in pointer.companions where !pending.contains(r) {
                let path = relativePath(r, ledger)
                let outcome = deleter.delete(r, in: ledger, checkingAge: checkingAge)
                switch outcome {
                case .removed, .simulated: gone.entries.append((path, pending.removeFile(r, in: ledger), false))
                case .vanished: continue
                case .changed: changed.append(r); return false
                case .lockLost, .lockHeld, .lockUnusable: noteLockRefusal(outcome); return false
                case .failed(let errno):
                    events.error(
                        "cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(path), kind: "delete")
                    return false
                }
            }
            guard deleteLink(pointer.link, of: unit, &gone, ledger, &events) else { return false }
        }
        return true
    }

    private mutating func deleteLink(
        _ link: PointerLink, of unit: Unit, _ gone: inout PointersGone, _ ledger: SizeLedger,
        _ events: inout EventOutbox
    ) -> Bool {
        // A folder gone in this trim (a unit moved whole, or emptied and removed) took its links with it.
        guard !pending.contains(node: link.dir) else { return true }
        let path = PathBytes.join(ledger.relativePath(of: link.dir), link.name)
        let outcome = deleter.deleteLink(link, in: ledger)
        switch outcome {
        case .removed: gone.entries.append((path, 0, true))
        case .lockLost, .lockHeld, .lockUnusable: noteLockRefusal(outcome); return false
        case .simulated: if simulatedLinks.insert(path).inserted { gone.entries.append((path, 0, true)) }
        case .vanished: break
        case .changed:
            // No longer the link read: what is there now must not lead into the unit.
            return unit.node.map { !stillLeads(link, into: $0, ledger) } ?? true
        case .failed(let errno):
            reportFailure(errno, link, ledger, &events)
            return false
        }
        return true
    }

    /// Whether what is at a pointer's name now leads into `unit`, or cannot be read (then it might).
    private func stillLeads(_ link: PointerLink, into unit: NodeID, _ ledger: SizeLedger) -> Bool {
        guard case .depth(let depth) = runtime.settings.evictUnit else { return true }
        var resolver = PointerResolver(root: root, configuredPath: runtime.settings.path, ledger)
        defer { resolver.close() }
        switch resolver.reread(link, ledger) {
        case nil: return false
        case .failure?: return true
        case .success(let target)?:
            guard case .units(let units) = resolver.resolve(target, from: link.dir, depth: depth, ledger) else {
                return true
            }
            return units.contains(unit)
        }
    }

    private func reportFailure(_ errno: Errno, _ link: PointerLink, _ ledger: SizeLedger, _ events: inout EventOutbox) {
        let path = PathBytes.join(ledger.relativePath(of: link.dir), link.name)
        events.error("cannot delete: \(errno)", dir: runtime.name, file: PathBytes.display(path), kind: "delete")
    }
}
