import Dispatch
import Glibc
import Synchronization
import SystemPackage

/// What a walk calls with each directory it opened, before reading it (the backend's watch): the directory, its
/// `fstat`. What it answers is reported with the directory, and the walker never reads it.
package typealias WatchHook<Watch> = @Sendable (_ directory: FileDescriptor, _ status: stat) -> Watch

/// What a walk leaves out (the `exclude` globs): given the path of a directory relative to the root and the name of
/// an entry in it, the entry's relative path, or nil when the entry is excluded.
package typealias ExcludeHook = @Sendable (_ directory: [UInt8], _ name: [UInt8]) -> [UInt8]?

/// Reads a directory tree with system calls only — no ledger, no engine state — so that the initial scan can run
/// it on threads of their own while the watcher's queue builds the ledger from what it finds. Run-time scans call
/// it inline.
///
/// Safety is by construction: the walk starts from a descriptor the caller verified and opens every directory
/// relative to its parent with `O_DIRECTORY | O_NOFOLLOW`, checking that it is the inode the parent's entry
/// named. Each directory is handed to the walk's `watch` (when the walk watches) *before* its entries are read,
/// so a file created in between is seen by the read or by an event — never by neither.
package struct TreeWalker: Sendable {
    package var dev: UInt64
    package var oneFileSystem: Bool
    /// What the walk leaves out. Without it nothing is, and relative paths are not kept.
    package var exclude: ExcludeHook?
    package var fileStat: FileStat
    /// Subdirectories of the top already read (name → inode): not descended (a re-read of one directory).
    package var knownSubdirectories: [[UInt8]: UInt64] = [:]
    /// The top is a root: its trash folder (`skipped`: CacheWarden's own, never counted) is not read.
    package var skipped: (@Sendable (UnsafeRawBufferPointer) -> Bool)?

    package init(dev: UInt64, oneFileSystem: Bool, exclude: ExcludeHook?, fileStat: FileStat) {
        self.dev = dev
        self.oneFileSystem = oneFileSystem
        self.exclude = exclude
        self.fileStat = fileStat
    }

    /// A directory still to read: opened already (the top) or to be opened from its parent's descriptor.
    package struct Pending: Sendable {
        var id: WalkID
        var parent: WalkID
        var name: [UInt8]
        /// The inode the parent's entry named: from its `lstat`, or — `listed` — from the listing alone, whose
        /// type said directory (no `lstat`: the open checks it instead, see `open`).
        var ino: UInt64
        var listed = false
        /// Path relative to the root (kept only when there are `exclude` globs to match).
        var relative: [UInt8]
        var parentFD: OwnedDescriptor?
        /// The top's descriptor, opened by the caller; nil for a directory still to be opened from `parentFD`.
        var opened: OwnedDescriptor?
    }

    /// The top of a walk, opened as `top`.
    package static func top(_ top: OwnedDescriptor, ino: UInt64, relative: [UInt8]) -> Pending {
        Pending(id: 0, parent: -1, name: [], ino: ino, relative: relative, parentFD: nil, opened: top)
    }

    /// Walks the tree on the calling thread, handing each directory to `watch` (if any) before reading it. Stops
    /// early when `cancelled()` turns true.
    package func walk<Watch: Sendable>(
        _ top: Pending, watch: WatchHook<Watch>?, cancelled: () -> Bool, report: (WalkedDirectory<Watch>) -> Void
    ) {
        var nextID: WalkID = 1
        var stack = [top]
        let buffer = DirectoryBuffer()
        while let item = stack.popLast() {
            if cancelled() { continue }
            let (dir, children) = read(item, buffer, watch: watch) {
                defer { nextID += 1 }; return nextID
            }
            if let dir { report(dir) }
            stack.append(contentsOf: children.reversed())
        }
    }

    /// Walks the tree with `threads` walkers sharing one stack of directories (each reports a directory before
    /// its children become visible to the others, so parents always come first). For the initial scan of big
    /// trees: the per-entry `fstatat` is most of the cost, and it spreads over the cores.
    package func walkInParallel<Watch: Sendable>(
        _ top: Pending, threads: Int, watch: WatchHook<Watch>?, cancelled: @escaping @Sendable () -> Bool,
        report: @escaping @Sendable (WalkedDirectory<Watch>) -> Void
    ) {
        let work = SharedWork(top)
        let ids = Atomic<WalkID>(1)
        let group = DispatchGroup()
        for n in 0..<max(1, threads) {
            group.enter()
            let thread = Thread {
                let buffer = DirectoryBuffer()
                while let item = work.next() {
                    if cancelled() {
                        work.finished(adding: [])
                        continue
                    }
                    let (dir, children) = self.read(item, buffer, watch: watch) {
                        ids.wrappingAdd(1, ordering: .relaxed).oldValue
                    }
                    if let dir { report(dir) }
                    work.finished(adding: children.reversed())
                }
                group.leave()
            }
            thread.name = "cachewarden.walk.\(n)"
            thread.start()
        }
        group.wait()
    }

    /// Opens (if needed), watches and reads one directory; returns its report (nil for a mount point the walk does
    /// not enter) and its subdirectories.
    private func read<Watch: Sendable>(
        _ pending: Pending, _ buffer: DirectoryBuffer, watch: WatchHook<Watch>?, nextID: () -> WalkID
    ) -> (WalkedDirectory<Watch>?, [Pending]) {
        var dir = WalkedDirectory<Watch>(id: pending.id, parent: pending.parent, name: pending.name, ino: pending.ino)
        let opened: (owner: OwnedDescriptor, status: stat)?
        do throws(Errno) { opened = try open(pending) } catch {
            dir.readError = error
            // Filed with the inode its name has (the listing's may be another number for it: overlayfs).
            if pending.listed, let parentFD = pending.parentFD,
                let st = try? pending.name.withCString({ n throws(Errno) in try Syscall.lstat(at: parentFD.fd, n) })
            {
                dir.ino = UInt64(st.st_ino)
            }
            return (dir, [])
        }
        guard let (shared, st) = opened else { return (nil, []) }
        let fd = shared.fd
        dir.ino = UInt64(st.st_ino)
        dir.bytes = fileStat.bytes(st)
        dir.watch = watch?(fd, st)
        var subdirectories: [Pending] = []
        do throws(Errno) {
            try Syscall.readDirectory(fd, fromStart: pending.opened != nil, buffer: buffer) { entry in
                readEntry(entry, in: shared, pending, into: &dir, subdirectories: &subdirectories, nextID: nextID)
            }
        } catch {
            dir.readError = error
        }
        return (dir, subdirectories)
    }

    /// The directory's descriptor and status: the top's own, or opened relative to its verified parent and
    /// checked to be the inode the parent's entry named (one replaced in between is left to its own events).
    /// Nil for a mount point of another filesystem (not entered).
    ///
    /// A subdirectory is opened without crossing into another mount (`openat2` with `RESOLVE_NO_XDEV`): a mount
    /// point fails with `EXDEV` and, with `one_file_system` (the default), is not entered — a bind mount of a
    /// folder of the same filesystem included, which `st_dev` cannot tell — and an automount point is never
    /// triggered. Without `one_file_system`, a mount point of the same filesystem is `lstat`ed (the listing's
    /// inode is the covered directory's) and entered. Where the inode differs from the listing's, the directory
    /// was swapped — unless the filesystem is overlayfs, which may list another number than `stat` reports: there
    /// an `lstat` of the name must agree with the descriptor. Before Linux 5.6 (no `openat2`), only another
    /// filesystem's mounts are told apart.
    private func open(_ pending: Pending) throws(Errno) -> (owner: OwnedDescriptor, status: stat)? {
        if let top = pending.opened { return (top, try Syscall.fstat(top.fd)) }
        guard let parentFD = pending.parentFD else { throw Errno.badFileDescriptor }
        return try pending.name.withCString { name throws(Errno) -> (owner: OwnedDescriptor, status: stat)? in
            var expected = pending.ino
            var inMount: OwnedDescriptor?
            if pending.listed || oneFileSystem {
                do throws(Errno) { inMount = try Syscall.openDirectoryInMount(at: parentFD.fd, name) } catch {
                    guard error == .improperLink || error == .noFunction else { throw error }
                    if error == .improperLink && oneFileSystem { return nil }
                    let st = try Syscall.lstat(at: parentFD.fd, name)
                    guard st.isDirectory, UInt64(st.st_dev) == dev else { return nil }
                    expected = UInt64(st.st_ino)
                }
            }
            let owner: OwnedDescriptor
            if let inMount { owner = inMount } else { owner = try Syscall.openDirectory(at: parentFD.fd, name) }
            // A descriptor refused below closes as `owner` goes.
            let fd = owner.fd
            let st = try Syscall.fstat(fd)
            guard UInt64(st.st_dev) == dev else { throw Errno.staleNFSFileHandle }
            if UInt64(st.st_ino) != expected {
                // Not what the listing named: a swap, or another number for the same directory (overlayfs).
                guard pending.listed, (try? Syscall.fileSystem(of: fd))?.magic == Syscall.overlayMagic,
                    let now = try? Syscall.lstat(at: parentFD.fd, name),
                    now.st_ino == st.st_ino, now.st_dev == st.st_dev
                else { throw Errno.staleNFSFileHandle }
            }
            return (owner, st)
        }
    }

    /// Opens subdirectory `name` of `parent` as the walk would (never through a symlink, not into another mount
    /// with `oneFileSystem`); nil for a mount point not entered.
    package static func openSubdirectory(at parent: FileDescriptor, _ name: UnsafePointer<CChar>, oneFileSystem: Bool)
        throws(Errno) -> OwnedDescriptor?
    {
        do throws(Errno) { return try Syscall.openDirectoryInMount(at: parent, name) } catch {
            guard error == .improperLink || error == .noFunction else { throw error }
            if error == .improperLink && oneFileSystem { return nil }
            return try Syscall.openDirectory(at: parent, name)
        }
    }

    /// One entry: a regular file joins `dir.files` (after an `lstat`), a directory (on this filesystem)
    /// `subdirectories`. The listing's type spares the `lstat` of directories (their open checks them) and of
    /// everything neither counted nor descended (symlinks, devices, sockets).
    private func readEntry<Watch: Sendable>(
        _ entry: DirectoryEntry, in parent: OwnedDescriptor, _ pending: Pending,
        into dir: inout WalkedDirectory<Watch>, subdirectories: inout [Pending], nextID: () -> WalkID
    ) {
        let listedDirectory = entry.isDirectory && (pending.id != 0 || knownSubdirectories.isEmpty)
        guard entry.isDirectory || entry.isRegularFile || entry.typeUnknown else { return }
        let name = entry.name
        var st = stat()
        if !listedDirectory {
            guard let found = try? Syscall.lstat(at: parent.fd, name), found.isDirectory || found.isRegularFile else {
                return
            }
            st = found
        }
        let length = strlen(name)
        let bytes = UnsafeRawBufferPointer(start: name, count: length)
        if pending.id == 0, let skipped, skipped(bytes) { return }
        var relative: [UInt8] = []
        if let exclude {
            guard let path = exclude(pending.relative, Array(bytes)) else { return }
            relative = path
        }
        if listedDirectory {
            subdirectories.append(
                Pending(
                    id: nextID(), parent: pending.id, name: Array(bytes), ino: entry.ino, listed: true,
                    relative: relative, parentFD: parent))
        } else if st.isRegularFile {
            let status = fileStat.status(st, dirfd: parent.fd, name: name, noBirthTime: &dir.noBirthTime)
            dir.files.append(WalkedFile(nameStart: UInt32(dir.names.count), nameLength: UInt8(length), status: status))
            dir.names.append(contentsOf: bytes)
        } else if pending.id == 0, !knownSubdirectories.isEmpty, knownSubdirectories[Array(bytes)] == UInt64(st.st_ino)
        {
            return
        } else if !oneFileSystem || UInt64(st.st_dev) == dev {
            subdirectories.append(
                Pending(
                    id: nextID(), parent: pending.id, name: Array(bytes), ino: UInt64(st.st_ino),
                    relative: relative, parentFD: parent))
        }
    }
}
