import CacheWardenLedger
import CacheWardenFilesystem
import Glibc
import SystemPackage

/// A unit's way out: it leaves its client's view in one rename into the root's trash and is deleted there.
///
/// Before the rename, every file counted for it was checked by name (`check`: the inode counted, no newer than its
/// counted age), and its folder is surveyed through descriptors (`UnitSurvey`): it must hold those files and no
/// other, and nothing a unit cannot (a mount point, a socket, a FIFO, a device). A unit that also holds a file not
/// counted (excluded, or not seen yet) stays: deleting the folder would take it too. After the rename, the moved folder
/// must be the folder counted and hold the same files; else it is put back under its name (or beside it), never
/// deleted. It is emptied in the trash a moment later (`Engine.emptyTrashes`, `TreeRemover`), so that a reader that had
/// opened the folder just before the rename still reads it whole.
extension SafeRemover {
    mutating func evictUnit(_ node: NodeID, files: [RecordID], in ledger: SizeLedger) -> UnitOutcome {
        guard !ledger.isRoot(node) else { return .changed }
        if let refused = renameRefused { return .notAtomic(refused) }
        let expected = Set(files.map { ledger.record($0).ino })
        let unitFD: FileDescriptor
        do throws(Errno) { unitFD = try directories.open(node, in: ledger) } catch { return .changed }
        if let refused = Self.refusal(holding: expected, unitFD) { return refused }
        guard let trash = trashFolder(ledger) else {
            if case .system(let e)? = trashProblem { return .notAtomic(e) }
            return .notAtomic(.fileExists)
        }
        let parent: FileDescriptor
        do throws(Errno) { parent = try directories.open(ledger.parent(of: node), in: ledger) } catch {
            return .changed
        }
        // The unit's own folders leave the cache (they lead into the trash now); the parent's stays open.
        var subtree: [NodeID] = []
        ledger.forEachNode(under: node) { subtree.append($0) }
        TrashFolder.nextEntryName(UInt8(ascii: "u"), into: &movedName)
        let moved = movedName, name = ledger.name(of: node) + [0], ino = ledger.node(node).ino
        return moved.withUnsafeBufferPointer { m in
            m.withMemoryRebound(to: CChar.self) { m in
                name.withUnsafeBufferPointer { n in
                    n.withMemoryRebound(to: CChar.self) { n in
                        moveUnit(
                            n.baseAddress!, in: parent, as: m.baseAddress!, in: trash.fd, inode: ino,
                            expected: expected,
                            forgetting: subtree)
                    }
                }
            }
        }
    }

    private mutating func moveUnit(
        _ name: UnsafePointer<CChar>, in parent: FileDescriptor, as moved: UnsafePointer<CChar>,
        in trash: FileDescriptor,
        inode: UInt64, expected: Set<UInt64>, forgetting subtree: [NodeID]
    ) -> UnitOutcome {
        do throws(Errno) { try Syscall.renameNoReplace(at: parent, name, to: trash, moved) } catch {
            if Self.renameUnsupported.contains(error) {
                renameRefused = error
                return .notAtomic(error)
            }
            return error == .noSuchFileOrDirectory ? .changed : .failed(error)
        }
        for n in subtree { directories.forget(n) }
        // Out of the client's view now: what was moved must be the unit counted, holding the files counted.
        let folder = try? Syscall.openDirectoryNotCrossing(at: trash, moved, pathOnly: true)
        let st = folder.flatMap { folder in folder.borrow { try? Syscall.fstat($0) } }
        let isUnit = st.map { $0.isDirectory && UInt64($0.st_dev) == device && UInt64($0.st_ino) == inode } ?? false
        guard isUnit, let folder, folder.borrow({ Self.refusal(holding: expected, $0) }) == nil else {
            putBack(moved, from: trash, as: name, in: parent)
            return .changed
        }
        // Deleted a moment later (`Engine.emptyTrashes`): a reader that opened the folder just before the rename
        // has that moment to finish reading it whole.
        movedUnits += 1
        return .moved
    }

    /// Nil when the folder open at `folder` holds exactly the regular files `expected` (inode numbers) and nothing a
    /// unit cannot: by the listing's inode numbers, and where those do not agree (overlayfs may list other numbers
    /// than `stat` reports) by every file's `lstat`. Else `.kept` (what it holds cannot leave whole, which lasts)
    /// or `.changed` (other files than those counted: a change the next stat catches up with).
    static func refusal(holding expected: Set<UInt64>, _ folder: FileDescriptor) -> UnitOutcome? {
        let listed = UnitSurvey(folder, statting: false)
        if let why = listed.unexpected { return .kept(why) }
        if listed.files == expected && !listed.vanished { return nil }
        let statted = UnitSurvey(folder, statting: true)
        if let why = statted.unexpected { return .kept(why) }
        return statted.files == expected && !statted.vanished ? nil : .changed
    }
}
