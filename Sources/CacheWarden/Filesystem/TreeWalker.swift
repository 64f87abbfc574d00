import Dispatch
import Glibc
import SystemPackage
import Synchronization

/// A regular file a walk found: its name (in the directory's `names` buffer) and what its stat counts.
struct WalkedFile: Sendable {
    var nameStart: UInt32
    var nameLength: UInt8
    var status: FileStatus
}

/// One directory a walk read, reported after its entries were read; parents are always reported before children.
struct WalkedDirectory: Sendable {
    /// Walk-local id (0 for the top); `parent` is the id of the directory it was found in (-1 for the top).
    var id: Int32
    var parent: Int32
    var name: [UInt8]
    var ino: UInt64
    /// The directory's own counted bytes.
    var bytes: Int64 = 0
    /// The watch the backend gave it (`nil` when the walk does not watch).
    var watch: WatchAttempt?
    /// The directory could not be opened or read (its entries are missing).
    var readError: Errno?
    /// The names of `files`, back to back (one allocation per directory, not per file).
    var names: [UInt8] = []
    var files: [WalkedFile] = []
    /// Files whose filesystem has no birth time (`order = btime` fell back to mtime).
    var noBirthTime = false

    func withName<R>(_ file: WalkedFile, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        names.withUnsafeBytes { all in
            body(UnsafeRawBufferPointer(rebasing: all[Int(file.nameStart)..<Int(file.nameStart) + Int(file.nameLength)]))
        }
    }
}

/// Reads a directory tree with system calls only — no ledger, no engine state — so that the initial scan can run
/// it on threads of their own while the watcher's queue builds the ledger from what it finds. Run-time scans call
/// it inline.
///
/// Safety is by construction: the walk starts from a descriptor the caller verified and opens every directory
/// relative to its parent with `O_DIRECTORY | O_NOFOLLOW`, checking that it is the inode the parent's entry
/// named. Each directory is handed to the backend's `watcher` (when the walk watches) *before* its entries are
/// read, so a file created in between is seen by the read or by an event — never by neither.
struct TreeWalker: Sendable {
    var watcher: DirectoryWatcher?
    var events: WatchEvents
    var dev: UInt64
    var oneFileSystem: Bool
    var exclude: GlobMatcher
    var fileStat: FileStat
    /// Subdirectories of the top already read (name → inode): not descended (a re-read of one directory).
    var knownSubdirectories: [[UInt8]: UInt64] = [:]

    /// A directory still to read: opened already (the top) or to be opened from its parent's descriptor.
    struct Pending: Sendable {
        var id: Int32
        var parent: Int32
        var name: [UInt8]
        var ino: UInt64
        /// Path relative to the root (kept only when there are `exclude` globs to match).
        var relative: [UInt8]
        var parentFD: OwnedDescriptor?
        var fd: Int32
    }

    /// The top of a walk; `fd` is owned by the walk (closed by it).
    static func top(fd: Int32, ino: UInt64, relative: [UInt8]) -> Pending {
        Pending(id: 0, parent: -1, name: [], ino: ino, relative: relative, parentFD: nil, fd: fd)
    }

    /// Walks the tree on the calling thread. Stops early when `cancelled()` turns true.
    func walk(_ top: Pending, cancelled: () -> Bool, report: (WalkedDirectory) -> Void) {
        var nextID: Int32 = 1
        var stack = [top]
        while let item = stack.popLast() {
            if cancelled() {
                if item.fd >= 0 { Syscall.close(item.fd) }
                continue
            }
            let (dir, children) = read(item) { defer { nextID += 1 }; return nextID }
            report(dir)
            stack.append(contentsOf: children.reversed())
        }
    }

    /// Walks the tree with `threads` walkers sharing one stack of directories (each reports a directory before
    /// its children become visible to the others, so parents always come first). For the initial scan of big
    /// trees: the per-entry `fstatat` is most of the cost, and it spreads over the cores.
    func walkInParallel(_ top: Pending, threads: Int, cancelled: @escaping @Sendable () -> Bool,
                        report: @escaping @Sendable (WalkedDirectory) -> Void) {
        let work = SharedWork(top)
        let ids = Atomic<Int32>(1)
        let group = DispatchGroup()
        for n in 0..<max(1, threads) {
            group.enter()
            let thread = Thread {
                while let item = work.next() {
                    if cancelled() {
                        if item.fd >= 0 { Syscall.close(item.fd) }
                        work.finished(adding: [])
                        continue
                    }
                    let (dir, children) = self.read(item) { ids.wrappingAdd(1, ordering: .relaxed).oldValue }
                    report(dir)
                    work.finished(adding: children.reversed())
                }
                group.leave()
            }
            thread.name = "cachewarden.walk.\(n)"
            thread.start()
        }
        group.wait()
    }

    /// Opens (if needed), watches and reads one directory; returns its report and its subdirectories.
    private func read(_ pending: Pending, nextID: () -> Int32) -> (WalkedDirectory, [Pending]) {
        var dir = WalkedDirectory(id: pending.id, parent: pending.parent, name: pending.name, ino: pending.ino)
        let fd: Int32
        do throws(Errno) { fd = try open(pending) } catch {
            dir.readError = error
            return (dir, [])
        }
        let shared = OwnedDescriptor(fd)
        if let st = try? Syscall.fstat(fd) { dir.bytes = fileStat.bytes(st) }
        dir.watch = watcher?.watch(fd, events)
        var subdirectories: [Pending] = []
        do throws(Errno) {
            try Syscall.readDirectory(fd) { name in
                readEntry(name, in: shared, pending, into: &dir, subdirectories: &subdirectories, nextID: nextID)
            }
        } catch {
            dir.readError = error
        }
        return (dir, subdirectories)
    }

    /// The directory's descriptor: the top's own, or opened relative to its verified parent and checked to be the
    /// inode the parent's entry named (one replaced in between is left to its own events).
    private func open(_ pending: Pending) throws(Errno) -> Int32 {
        if pending.fd >= 0 { return pending.fd }
        guard let parentFD = pending.parentFD else { throw Errno.badFileDescriptor }
        let fd = try pending.name.withCString { p throws(Errno) in try Syscall.openDirectory(at: parentFD.fd, p) }
        guard let st = try? Syscall.fstat(fd), UInt64(st.st_ino) == pending.ino, UInt64(st.st_dev) == dev else {
            Syscall.close(fd)
            throw Errno.staleNFSFileHandle
        }
        return fd
    }

    /// Stats one entry: a regular file joins `dir.files`, a directory (on this filesystem) `subdirectories`.
    private func readEntry(_ name: UnsafePointer<CChar>, in parent: OwnedDescriptor, _ pending: Pending,
                           into dir: inout WalkedDirectory, subdirectories: inout [Pending], nextID: () -> Int32) {
        guard let st = try? Syscall.lstat(at: parent.fd, name), st.isDirectory || st.isRegularFile else { return }
        let length = strlen(name)
        let bytes = UnsafeRawBufferPointer(start: name, count: length)
        var relative: [UInt8] = []
        if !exclude.isEmpty {
            relative = PathBytes.join(pending.relative, Array(bytes))
            if exclude.matches(relative) { return }
        }
        if st.isRegularFile {
            let status = fileStat.status(st, dirfd: parent.fd, name: name, noBirthTime: &dir.noBirthTime)
            dir.files.append(WalkedFile(nameStart: UInt32(dir.names.count), nameLength: UInt8(length), status: status))
            dir.names.append(contentsOf: bytes)
        } else if pending.id == 0, !knownSubdirectories.isEmpty, knownSubdirectories[Array(bytes)] == UInt64(st.st_ino) {
            return
        } else if !oneFileSystem || UInt64(st.st_dev) == dev {
            subdirectories.append(Pending(id: nextID(), parent: pending.id, name: Array(bytes), ino: UInt64(st.st_ino),
                                          relative: relative, parentFD: parent, fd: -1))
        }
    }
}
