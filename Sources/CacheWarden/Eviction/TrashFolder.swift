import CacheWardenFilesystem
import Glibc
import Synchronization
import SystemPackage

/// The folder at the top of a root where what is being deleted goes first: a unit (`evict_unit`) leaves its
/// client's view in one `rename` into it and is deleted there, and a file about to be deleted is moved into it and
/// checked once more before its `unlink` (`SafeRemover`). Clients do not look into it; CacheWarden never counts,
/// watches or reports it (`isTrashName`). It is made at a trim's first deletion (owner only, `0700`) and removed
/// when the trim is done, so a client's own cleaner (`uv cache prune` deletes unknown folders) rarely meets it;
/// what a crash leaves in it was already out of every client's view and goes at the next start (`recover`).
///
/// What CacheWarden moves into it is named `f-<salt>-<n>` (a file) or `u-<salt>-<n>` (a unit), the salt random per
/// process. A folder of the trash's name is CacheWarden's when it belongs to this user, is writable by no one else,
/// and is empty or holds only such names; anything else means someone else made it: it is never touched, and the
/// root is refused instead. One watcher per root: a second one's `recover` would take the first's leftovers.
package enum TrashFolder {
    package static let name = ".cachewarden-trash"

    /// Whether `name`, at the top of a root, is the trash: never counted or watched.
    static func isTrashName(_ name: UnsafeRawBufferPointer) -> Bool {
        name.elementsEqual(Self.name.utf8)
    }

    /// Why a root's trash cannot be used.
    enum Problem: Error, Equatable {
        /// Something of the trash's name that CacheWarden did not make.
        case foreign
        case system(Errno)
    }

    /// Writes the name of the next thing moved into a trash into `name` (its NUL included): `kind` (`f` or `u`),
    /// this process's salt, a counter — into a buffer reused for every victim (no allocation per file).
    static func nextEntryName(_ kind: UInt8, into name: inout [UInt8]) {
        name.removeAll(keepingCapacity: true)
        name.append(kind)
        name.append(UInt8(ascii: "-"))
        appendDecimal(salt, to: &name)
        name.append(UInt8(ascii: "-"))
        appendDecimal(counter.wrappingAdd(1, ordering: .relaxed).oldValue, to: &name)
        name.append(0)
    }

    private static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
        let start = bytes.count
        var v = value
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(v % 10))
            v /= 10
        } while v > 0
        bytes[start...].reverse()
    }

    /// Random per process: names never meet another process's, even in another PID namespace.
    private static let salt = UInt64.random(in: 1...UInt64(UInt32.max))
    private static let counter = Atomic<UInt64>(0)

    /// Whether `entry` is a name `nextEntryName` gives (any salt: a crashed run's).
    static func isEntryName(_ entry: [UInt8]) -> Bool {
        let parts = entry.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 1,
            parts[0].first == UInt8(ascii: "f") || parts[0].first == UInt8(ascii: "u")
        else {
            return false
        }
        return parts.dropFirst().allSatisfy { !$0.isEmpty && $0.allSatisfy { (48...57).contains($0) } }
    }

    /// The trash of the root open at `root` (any descriptor of it), made if it is missing; `.foreign` when
    /// something else has its name.
    static func open(in root: FileDescriptor) throws(Problem) -> OwnedDescriptor {
        let name = Array(Self.name.utf8)
        let made = name.withCString { n in
            Result { () throws(Errno) in try Syscall.makeDirectory(at: root, n, mode: 0o700) }
        }
        if case .failure(let e) = made, e != .fileExists { throw .system(e) }
        let trash: OwnedDescriptor
        do throws(Errno) {
            trash = try name.withCString { n throws(Errno) in
                try Syscall.openDirectoryNotCrossing(at: root, n, pathOnly: true)
            }
        } catch {
            throw error == .notDirectory || error == .tooManySymbolicLinkLevels || error == .improperLink
                ? .foreign : .system(error)
        }
        if case .failure = made { _ = try entries(of: trash) } // not made now: it must be CacheWarden's
        return trash
    }

    /// Deletes what this process moved into the root's trash (names with its salt), then the trash itself if
    /// nothing is left in it; returns the first error met (what it concerns stays, for the next start).
    static func empty(in root: FileDescriptor) -> Errno? {
        let opened = Array(name.utf8).withCString { n in
            Result { () throws(Errno) in try Syscall.openDirectoryNotCrossing(at: root, n, pathOnly: true) }
        }
        guard case .success(let trash) = opened else { return nil }
        guard let entries = try? entries(of: trash) else { return nil }
        var remover = TreeRemover()
        // The trash stays open until it is removed, as it did when its owner lived to the end of the scope.
        withExtendedLifetime(trash) {
            for entry in entries where isOwnEntry(entry) { remover.removeEntry(entry, in: trash.fd) }
            removeIfEmpty(in: root)
        }
        return remover.firstError
    }

    /// Whether `entry` is a name this process gave (its salt).
    private static func isOwnEntry(_ entry: [UInt8]) -> Bool {
        let parts = entry.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return parts.count == 3 && parts[1].elementsEqual(String(salt).utf8)
    }

    /// Removes the root's trash if nothing is left in it (at the end of a trim).
    static func removeIfEmpty(in root: FileDescriptor) {
        _ = try? Array(name.utf8).withCString { n throws(Errno) in try Syscall.unlink(at: root, n, directory: true) }
    }

    /// The entries of `trash`, all of them CacheWarden's; `.foreign` when one is not, or when the folder is
    /// another user's or writable by others (someone else could put things in it, or swap them).
    private static func entries(of trash: OwnedDescriptor) throws(Problem) -> [[UInt8]] {
        var found: [[UInt8]] = []
        guard let st = try? Syscall.fstat(trash.fd), st.st_uid == geteuid(), st.st_mode & 0o022 == 0 else {
            throw .foreign
        }
        do throws(Errno) {
            let listing = try Syscall.reopenForListing(trash.fd)
            try listing.borrow { (listed) throws(Errno) in
                try Syscall.readDirectory(listed) { entry in
                    found.append(Array(UnsafeRawBufferPointer(start: entry.name, count: strlen(entry.name))))
                }
            }
        } catch { throw .system(error) }
        guard found.allSatisfy(isEntryName) else { throw .foreign }
        return found
    }

    /// Whether the folder at `root` (a path) holds something of the trash's name that CacheWarden did not make.
    package static func isForeign(in root: String) -> Bool {
        guard let folder = try? Syscall.openDirectoryPath(path: root) else { return false }
        let opened = folder.borrow { fd in
            Array(name.utf8).withCString { n in
                Result { () throws(Errno) in try Syscall.openDirectoryNotCrossing(at: fd, n, pathOnly: true) }
            }
        }
        switch opened {
        case .success(let trash):
            do throws(Problem) { _ = try entries(of: trash) } catch { return error == .foreign }
            return false
        case .failure(let e): return e == .notDirectory || e == .tooManySymbolicLinkLevels || e == .improperLink
        }
    }

    /// Empties the trash of the root open at `root` of what an interrupted run left; returns how many files and
    /// folders went. Throws `.foreign` (touching nothing) when the trash's name is someone else's.
    @discardableResult
    static func recover(in root: FileDescriptor) throws(Problem) -> Int {
        let opened = Array(name.utf8).withCString { n in
            Result { () throws(Errno) in try Syscall.openDirectoryNotCrossing(at: root, n, pathOnly: true) }
        }
        let trash: OwnedDescriptor
        switch opened {
        case .success(let opened): trash = opened
        case .failure(.noSuchFileOrDirectory): return 0
        case .failure(.notDirectory), .failure(.tooManySymbolicLinkLevels), .failure(.improperLink): throw .foreign
        case .failure(let e): throw .system(e)
        }
        var remover = TreeRemover()
        let found = try entries(of: trash)
        trash.borrow { fd in for entry in found { remover.removeEntry(entry, in: fd) } }
        return remover.removed
    }
}
