import Glibc
import SystemPackage

/// The client locks taken for one trim of a root, or for one unit: each lock file (its lock held in the engine's
/// `LockFileRegistry`, shared with every other taker of the same file), the lock files that were not there, and the
/// folders where a pattern was matched. Releasing (`release()`, at the latest when this is dropped) lets go of each.
///
/// `stillHeld()` tells whether what was taken still stands: each file taken still at its path (not removed, not
/// replaced by another), each one that was missing still missing, and no new file matching a pattern (a download
/// that began meanwhile locks a lock file of its own). A lock file removed while held means the next client creates
/// a new one and locks that: the exclusion is gone, so the trim must stop.
final class HeldClientLocks {
    typealias FileIdentity = LockFileRegistry.FileIdentity

    struct Taken {
        let key: LockFileRegistry.Key
        let target: LockTarget
        var identity: FileIdentity { key.file }
    }

    let registry: LockFileRegistry
    private(set) var taken: [Taken] = []
    /// Lock files (or folders on their way) named outright that were not there: a client that starts now creates
    /// one and takes it.
    private(set) var absent: [LockTarget] = []
    /// Where patterns were matched: listed again by `stillHeld()`.
    private(set) var patterns: [LockPatternSite] = []
    /// Set once `stillHeld()` found a change: from then on every deletion of the trim is refused.
    private(set) var lost: ClientLockBusy.Why?
    private(set) var lostLock: String?
    /// The folders of all of the above, made at the first `stillHeld()`.
    private var watches: [LockFolderWatch]?

    init(registry: LockFileRegistry) { self.registry = registry }

    var identities: Set<FileIdentity> { Set(taken.map(\.identity)) }
    var isEmpty: Bool { taken.isEmpty && absent.isEmpty && patterns.isEmpty }

    /// Records a lock of `registry` (already retained for this taker).
    func add(_ key: LockFileRegistry.Key, _ target: LockTarget) { taken.append(Taken(key: key, target: target)) }
    func addAbsent(_ target: LockTarget) { absent.append(target) }
    func watch(_ resolution: LockResolution) {
        absent += resolution.absent
        patterns += resolution.patterns
    }

    /// Whether every lock still stands as taken; the first change found is kept (`lost`, `lostLock`) and reported
    /// by every later call without looking again. Each folder first (`LockFolderWatch`: its path must still name the
    /// folder held), then one `fstatat` per lock file and one listing per pattern folder, every time: a folder's
    /// times are not trusted to tell that nothing changed in it (another node's clock on a cluster filesystem, a
    /// clock stepped back under coarse timestamps). The cost is a re-check per deletion only where a unit goes file
    /// by file; a unit goes in one rename, one re-check.
    func stillHeld() -> Bool {
        if lost != nil { return false }
        if watches == nil { watches = Self.watches(of: folders) }
        for w in watches ?? [] where !w.stillThere() { return lose(w.folder.display) }
        for t in taken {
            guard let st = try? t.target.lstat(), FileIdentity(st) == t.identity else { return lose(t.target.display) }
        }
        for a in absent {
            do throws(Errno) { _ = try a.lstat() } catch { if error == .noSuchFileOrDirectory { continue } }
            return lose(a.display) // there now (or no longer known not to be)
        }
        if let lock = newPatternMatch() { return lose(lock) }
        return true
    }

    /// A file matching a pattern that was not taken (or a folder that cannot be listed): its display; nil: none.
    private func newPatternMatch() -> String? {
        guard !patterns.isEmpty else { return nil }
        let mine = identities
        for site in patterns {
            guard let targets = LockTargets.targets(of: site) else { return site.folder.display }
            for target in targets {
                guard let st = try? target.lstat(), st.isRegularFile, !mine.contains(FileIdentity(st)) else { continue }
                return target.display
            }
        }
        return nil
    }

    /// One watch per folder (the same folder may be held through more than one descriptor: one each).
    private static func watches(of folders: [LockFolder]) -> [LockFolderWatch] {
        var seen = Set<ObjectIdentifier>()
        return folders.filter { seen.insert(ObjectIdentifier($0)).inserted }.map(LockFolderWatch.init)
    }

    /// Descriptors this holds open: one per lock file taken (shared ones too), one per folder.
    var descriptors: Int { taken.count + Set(folders.map(ObjectIdentifier.init)).count }

    /// The folders of every lock taken, absent or matched by a pattern (a folder may come more than once).
    private var folders: [LockFolder] { taken.map(\.target.folder) + absent.map(\.folder) + patterns.map(\.folder) }

    private func lose(_ lock: String) -> Bool {
        lost = .vanished
        lostLock = lock
        return false
    }

    /// What `stillHeld()` found, as a busy report of `dir`.
    func lostReport(dir: String) -> ClientLockBusy? {
        guard let lost, let lostLock else { return nil }
        return ClientLockBusy(dir: dir, lock: lostLock, why: lost)
    }

    /// Releases every lock (each let go in the registry). Idempotent.
    func release() {
        for t in taken { registry.release(t.key) }
        taken.removeAll()
        absent.removeAll()
        patterns.removeAll()
        watches = nil
    }

    deinit { release() }
}
