import CInotify
import Glibc
import SystemPackage

/// Registration and scanning: the one place directories are read. Each directory gets its inotify watch *before*
/// its entries are read, so a file created between the two is either seen by the scan or reported by an event
/// (both are harmless: the ledger is idempotent per name).
extension Engine {
    /// Registers a root: resolves its path, opens it without following symlinks, scans and watches its tree.
    func addRoot(_ dir: DirectorySettings) throws(WardenError) {
        guard rootID(named: dir.name) == nil else { throw .duplicateDirectory(dir.name) }
        let absolute = PathResolver.absolute(dir.path, relativeTo: PathResolver.currentDirectory())
        if dir.createIfMissing { PathResolver.createDirectories(absolute) }
        var st = stat()
        if lstat(absolute, &st) != 0 { throw Self.pathError(errno, absolute) }
        guard st.isDirectory else { throw .notADirectory(absolute) }
        guard let resolved = realpath(absolute, nil) else { throw Self.pathError(errno, absolute) }
        let path = String(cString: resolved)
        free(resolved)

        let id = nextRootID
        nextRootID += 1
        let pathBytes = Array(path.utf8)
        roots[id] = RootRuntime(id: id, settings: dir, path: path, pathBytes: pathBytes,
                                protect: GlobMatcher(dir.protect), exclude: GlobMatcher(dir.exclude))
        rootOrder.append(id)
        do throws(WardenError) {
            try scanRoot(id)
        } catch {
            removeRoot(id)
            throw error
        }
    }

    /// (Re)builds a root's ledger from disk. Throws for problems with the root itself and for the watch limit.
    func scanRoot(_ id: Int32) throws(WardenError) {
        let rt = roots[id]!
        var st = stat()
        if lstat(rt.path, &st) != 0 { throw Self.pathError(errno, rt.path) }
        guard st.isDirectory else { throw .notADirectory(rt.path) }
        let node = ledger.addRoot(id, path: rt.pathBytes, ino: UInt64(st.st_ino), dev: UInt64(st.st_dev))
        try scan(node, path: rt.pathBytes, root: id, discovered: false, strict: true)
        roots[id]!.lost = false
    }

    /// Drops a root: its watches and its ledger.
    func removeRoot(_ id: Int32) {
        var dropped: [Int32] = []
        ledger.removeRoot(id, droppedWatches: &dropped)
        dropWatches(dropped, remove: true)
        roots[id] = nil
        rootOrder.removeAll { $0 == id }
    }

    func dropWatches(_ wds: [Int32], remove: Bool) {
        for wd in wds {
            wdToNode[wd] = nil
            if remove { inotify?.removeWatch(wd) }
        }
    }

    static func pathError(_ code: Int32, _ path: String) -> WardenError {
        switch code {
        case ENOENT: return .pathMissing(path)
        case ENOTDIR, ELOOP: return .notADirectory(path)
        case EACCES, EPERM: return .permissionDenied(path)
        default: return .system(operation: "stat", path: path, errno: code)
        }
    }

    /// Adds the watch of a directory node. `ENOSPC` is the watch limit (never a full disk).
    /// The watch is added through `/proc/self/fd/N` of the verified descriptor `fd`, so it lands on exactly the
    /// directory that was checked, whatever happened to the path since; `path` is for messages.
    func watch(_ node: Int32, fd: Int32, path: [UInt8], root: Int32) throws(WardenError) {
        guard let inotify else { return }
        var mask = InotifyDescriptor.directoryEvents
        if roots[root]?.settings.order == .opened { mask |= CINOTIFY_IN_OPEN }
        let wd: Int32
        do throws(Errno) {
            if let override = addWatchOverride, let injected = override(Engine.display(path)) { throw injected }
            wd = try Array("/proc/self/fd/\(fd)".utf8).withCString { p throws(Errno) in try inotify.addWatch(p, events: mask, followingMagicLink: true) }
        } catch {
            let display = Engine.display(path)
            switch error {
            case .noSpace: throw .watchLimitReached(path: display, maxUserWatches: Int(cinotify_max_user_watches()))
            case .permissionDenied: throw .permissionDenied(display)
            case .noSuchFileOrDirectory: throw .pathMissing(display)
            case .notDirectory, .tooManySymbolicLinkLevels: throw .notADirectory(display)
            default: throw .system(operation: "inotify_add_watch", path: display, errno: error.rawValue)
            }
        }
        if let other = wdToNode[wd], other != node, ledger.node(other).live, ledger.node(other).wd == wd {
            // The same directory inode was still known under another node (a rename we did not pair): the new
            // place wins, the stale subtree goes (its watch descriptor is the one just returned, so keep it).
            var dropped: [Int32] = []
            ledger.removeSubtree(other, droppedWatches: &dropped)
            dropWatches(dropped.filter { $0 != wd }, remove: true)
        }
        wdToNode[wd] = node
        ledger.setWatch(node, wd: wd)
        blindNodes.remove(node)
    }

    /// Watches and reads the tree under `top` (iteratively: trees of any depth). With `strict`, problems with
    /// `top` itself and the watch limit are thrown (start-up); otherwise they become `error` events and the rest
    /// of the tree is still read. `discovered` marks files found at run time (they get `write` lines).
    /// Every directory is opened through `VerifiedDirectories` (never by a path string the kernel resolves).
    func scan(_ top: Int32, path topPath: [UInt8], root: Int32, discovered: Bool, strict: Bool) throws(WardenError) {
        let rt = roots[root]!
        let dev = ledger.accounts[root]!.dev
        var directories = VerifiedDirectories(ledger: ledger, root: root, rootPath: rt.pathBytes)
        defer { directories.close() }
        var stack: [(Int32, [UInt8])] = [(top, topPath)]
        while let (node, path) = stack.popLast() {
            guard ledger.node(node).live else { continue }
            let dirfd: Int32
            do throws(Errno) { dirfd = try directories.open(node) } catch {
                if strict && node == top { throw Self.pathError(error == .staleNFSFileHandle ? ENOENT : error.rawValue, Engine.display(path)) }
                if error != .noSuchFileOrDirectory && error != .staleNFSFileHandle && error != .tooManySymbolicLinkLevels {
                    emitError("cannot read directory: \(error)", dir: rt.settings.name,
                              file: Engine.display(ledger.relativePath(of: node)),
                              kind: error == .permissionDenied ? "permission" : "scan")
                }
                // Gone, renamed or swapped since it was seen: its own events settle the ledger; if it still
                // exists under a new name, it is read once they have been applied.
                if node != ledger.accounts[root]!.rootNode { unreadNodes.insert(node) }
                continue
            }
            do throws(WardenError) {
                try watch(node, fd: dirfd, path: path, root: root)
            } catch {
                if strict && (node == top || { if case .watchLimitReached = error { return true }; return false }()) {
                    throw error
                }
                if case .watchLimitReached = error {
                    // Not blind: read the directory now and re-read it on a timer until a watch can be added.
                    if blindNodes.insert(node).inserted {
                        emitError(error.description + "; re-reading this directory every \(settings.watchLimitRescanInterval)s instead",
                                  dir: rt.settings.name, file: Engine.display(ledger.relativePath(of: node)), kind: "watch_limit")
                    }
                    startBlindRescanTimer()
                } else {
                    emitError(error.description, dir: rt.settings.name,
                              file: Engine.display(ledger.relativePath(of: node)), kind: Self.issueKind(error))
                    continue
                }
            }
            // A description of its own for reading entries (the cached descriptor's offset stays untouched).
            // Read entries through a duplicate (closed with the DIR); `*at` calls ignore the shared offset.
            let readfd = dup(dirfd)
            guard readfd >= 0, let handle = fdopendir(readfd) else {
                if readfd >= 0 { Syscall.close(readfd) }
                continue
            }
            rewinddir(handle)
            let relativeBase = rt.exclude.isEmpty ? [] : ledger.relativePath(of: node)
            var st = stat()
            while let entry = readdir(handle) {
                // Stat by the entry's own NUL-terminated name: no copy unless the entry is kept.
                let kept: (name: [UInt8], st: stat)? = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                    tuple.withMemoryRebound(to: CChar.self, capacity: 256) { cName -> ([UInt8], stat)? in
                        if cName[0] == 46 && (cName[1] == 0 || (cName[1] == 46 && cName[2] == 0)) { return nil }
                        guard (try? Syscall.retrying({ fstatat(readfd, cName, &st, AT_SYMLINK_NOFOLLOW) })) != nil,
                              st.isDirectory || st.isRegularFile else { return nil }
                        let length = strlen(cName)
                        let name = cName.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
                        return (name, st)
                    }
                }
                guard let (name, st) = kept else { continue }
                if !rt.exclude.isEmpty {
                    var rel = relativeBase
                    if !rel.isEmpty { rel.append(UInt8(ascii: "/")) }
                    rel.append(contentsOf: name)
                    if rt.exclude.matches(rel) { continue }
                }
                if st.isDirectory {
                    if rt.settings.oneFileSystem && UInt64(st.st_dev) != dev { continue }
                    var dropped: [Int32] = []
                    let (child, isNew) = ledger.addDirectory(parent: node, name: name, ino: UInt64(st.st_ino), droppedWatches: &dropped)
                    dropWatches(dropped, remove: true)
                    if isNew || ledger.node(child).wd < 0 {
                        var childPath = path
                        childPath.append(UInt8(ascii: "/"))
                        childPath.append(contentsOf: name)
                        stack.append((child, childPath))
                    }
                } else {
                    let (r, _) = ledger.record(dir: node, name: name)
                    let status = rt.settings.order == .btime
                        ? name.withCString { fileStatus(st, root: root, dirfd: readfd, name: $0) }
                        : fileStatus(st, root: root, dirfd: readfd, name: nil)
                    ledger.apply(status, to: r, keepOpenedAge: rt.settings.order == .opened)
                    if discovered {
                        touchedRoots.insert(root)
                        emitWrite(r, root: root)
                    }
                }
            }
            closedir(handle)
        }
    }

    /// The ledger's view of a stat: counted bytes and the root's age key. For `order = btime` the birth time
    /// comes from `statx` on `name` relative to `dirfd`; where the filesystem has none, mtime is used and one
    /// `error` line per directory says so.
    func fileStatus(_ st: stat, root: Int32, dirfd: Int32, name: UnsafePointer<CChar>?) -> FileStatus {
        let age: Int64
        switch roots[root]!.settings.order {
        case .mtime, .opened: age = st.mtimeNanoseconds
        case .atime: age = st.atimeNanoseconds
        case .ctime: age = st.ctimeNanoseconds
        case .btime:
            var birth: Int64 = 0
            if let name, cinotify_birth_time(dirfd, name, &birth) == 0 {
                age = birth
            } else {
                age = st.mtimeNanoseconds
                if roots[root]!.reportedNoBirthTime == false {
                    roots[root]!.reportedNoBirthTime = true
                    emitError("this filesystem records no birth time: order = btime falls back to mtime",
                              dir: roots[root]!.settings.name, kind: "btime")
                }
            }
        }
        return FileStatus(ino: UInt64(st.st_ino), bytes: bytes(st), age: age, links: UInt32(truncatingIfNeeded: st.st_nlink))
    }

    func emitWrite(_ r: Int32, root: Int32) {
        guard let rt = roots[root], let account = ledger.accounts[root], let inode = ledger.inode(ofRecord: r) else { return }
        emit(.write(FileWritten(dir: rt.settings.name, file: Engine.display(ledger.relativePath(ofRecord: r)),
                                size: inode.bytes, total: account.total, files: account.files, quota: rt.settings.quota)))
    }

    static func issueKind(_ error: WardenError) -> String {
        switch error {
        case .watchLimitReached: "watch_limit"
        case .permissionDenied: "permission"
        case .pathMissing: "missing"
        default: "scan"
        }
    }
}
