import CInotify
import Foundation
import Glibc
import SystemPackage
import Synchronization

/// Reads a directory tree with system calls only — no ledger, no engine state — so that the initial scan can
/// run it on a thread of its own while the watcher's queue builds the ledger from what it finds (the scan then
/// costs about the larger of the two, not their sum). Run-time scans call it inline.
///
/// Safety is by construction: the walk starts from a descriptor the caller verified and opens every directory
/// relative to its parent with `O_DIRECTORY | O_NOFOLLOW`, checking that it is the inode the parent's entry
/// named; each watch is added through `/proc/self/fd/N` of that descriptor, before its entries are read.
struct TreeWalker: Sendable {
    /// A regular file found in a directory.
    struct File: Sendable {
        var name: [UInt8]
        var status: FileStatus
    }

    /// One directory, reported after its entries were read; parents are always reported before children.
    struct Directory: Sendable {
        /// Walk-local id (0 for the top); `parent` is the id of the directory it was found in (-1 for the top).
        var id: Int32
        var parent: Int32
        var name: [UInt8]
        var ino: UInt64
        /// Absolute path, for messages.
        var path: [UInt8]
        var wd: Int32 = -1
        var watchError: Errno?
        /// The directory could not be opened or read (its entries are missing).
        var readError: Errno?
        var files: [File] = []
        /// Files whose filesystem has no birth time (`order = btime` fell back to mtime).
        var noBirthTime = false
    }

    var inotifyFD: Int32
    var watchMask: UInt32
    var dev: UInt64
    var oneFileSystem: Bool
    var exclude: GlobMatcher
    var basis: SizeBasis
    var order: AgeOrder
    /// A seam for tests: replaces `inotify_add_watch` (e.g. to inject `ENOSPC`).
    var addWatchOverride: (@Sendable (String) -> Errno?)?

    /// The counted view of one `stat`: bytes under `basis`, age under `order` (`statx` birth time for `btime`,
    /// mtime when there is none — reported through `noBirthTime`).
    static func status(_ st: stat, basis: SizeBasis, order: AgeOrder, dirfd: Int32, name: UnsafePointer<CChar>?,
                       noBirthTime: inout Bool) -> FileStatus {
        let age: Int64
        switch order {
        case .mtime, .opened: age = st.mtimeNanoseconds
        case .atime: age = st.atimeNanoseconds
        case .ctime: age = st.ctimeNanoseconds
        case .btime:
            var birth: Int64 = 0
            if let name, cinotify_birth_time(dirfd, name, &birth) == 0 {
                age = birth
            } else {
                age = st.mtimeNanoseconds
                noBirthTime = true
            }
        }
        let bytes = basis == .allocated ? Int64(st.st_blocks) * 512 : Int64(st.st_size)
        return FileStatus(ino: UInt64(st.st_ino), bytes: bytes, age: age, links: UInt32(truncatingIfNeeded: st.st_nlink))
    }

    /// A directory still to read: opened already (the top) or to be opened from its parent's descriptor.
    struct Pending: Sendable {
        var id: Int32
        var parent: Int32
        var name: [UInt8]
        var ino: UInt64
        var path: [UInt8]
        var relative: [UInt8]
        var parentFD: SharedDescriptor?
        var fd: Int32
    }

    /// The top of a walk; `topFD` is owned by the walk (closed by it).
    static func top(fd: Int32, ino: UInt64, path: [UInt8], relative: [UInt8]) -> Pending {
        Pending(id: 0, parent: -1, name: [], ino: ino, path: path, relative: relative, parentFD: nil, fd: fd)
    }

    /// Walks the tree on the calling thread. Stops early when `cancelled()` turns true.
    func walk(_ top: Pending, cancelled: () -> Bool, report: (Directory) -> Void) {
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
                        report: @escaping @Sendable (Directory) -> Void) {
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
    private func read(_ pending: Pending, nextID: () -> Int32) -> (Directory, [Pending]) {
        var item = pending
        var dir = Directory(id: item.id, parent: item.parent, name: item.name, ino: item.ino, path: item.path)
        if item.fd < 0, let parentFD = item.parentFD {
            let opened = item.name.withCString { openat(parentFD.fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            item.parentFD = nil
            if opened < 0 {
                dir.readError = Errno(rawValue: errno)
                return (dir, [])
            }
            var st = stat()
            if Glibc.fstat(opened, &st) != 0 || UInt64(st.st_ino) != item.ino || UInt64(st.st_dev) != dev {
                // Replaced between its entry and our open: its own events will tell what it became.
                Syscall.close(opened)
                dir.readError = .staleNFSFileHandle
                return (dir, [])
            }
            item.fd = opened
        }
        let fd = SharedDescriptor(item.fd)
        // The watch first, then the entries: a file created in between is seen by one or the other.
        do throws(Errno) {
            if let override = addWatchOverride, let injected = override(String(decoding: item.path, as: UTF8.self)) { throw injected }
            dir.wd = try Array("/proc/self/fd/\(fd.fd)".utf8).withCString { p throws(Errno) in
                try Syscall.retrying { inotify_add_watch(inotifyFD, p, watchMask | (InotifyDescriptor.directoryFlags & ~CINOTIFY_IN_DONT_FOLLOW)) }
            }
        } catch {
            dir.watchError = error
        }
        let readfd = dup(fd.fd)
        guard readfd >= 0, let handle = fdopendir(readfd) else {
            if readfd >= 0 { Syscall.close(readfd) }
            dir.readError = Errno(rawValue: errno)
            return (dir, [])
        }
        rewinddir(handle)
        var st = stat()
        var subdirectories: [Pending] = []
        while let entry = readdir(handle) {
            let kept: (name: [UInt8], st: stat, status: FileStatus?)? = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: 256) { cName in
                    if cName[0] == 46 && (cName[1] == 0 || (cName[1] == 46 && cName[2] == 0)) { return nil }
                    guard (try? Syscall.retrying({ fstatat(fd.fd, cName, &st, AT_SYMLINK_NOFOLLOW) })) != nil,
                          st.isDirectory || st.isRegularFile else { return nil }
                    let length = strlen(cName)
                    let name = cName.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
                    let status = st.isRegularFile
                        ? Self.status(st, basis: basis, order: order, dirfd: fd.fd, name: cName, noBirthTime: &dir.noBirthTime)
                        : nil
                    return (name, st, status)
                }
            }
            guard let (name, entrySt, status) = kept else { continue }
            var relative = item.relative
            if !exclude.isEmpty {
                if !relative.isEmpty { relative.append(UInt8(ascii: "/")) }
                relative.append(contentsOf: name)
                if exclude.matches(relative) { continue }
            }
            if let status {
                dir.files.append(File(name: name, status: status))
            } else {
                if oneFileSystem && UInt64(entrySt.st_dev) != dev { continue }
                var path = item.path
                path.append(UInt8(ascii: "/"))
                path.append(contentsOf: name)
                subdirectories.append(Pending(id: nextID(), parent: item.id, name: name, ino: UInt64(entrySt.st_ino),
                                              path: path, relative: relative, parentFD: fd, fd: -1))
            }
        }
        closedir(handle)
        return (dir, subdirectories)
    }
}

/// The stack of directories shared by parallel walkers, with the count of directories being read so that an
/// empty stack is told apart from a finished walk.
final class SharedWork: Sendable {
    private struct State {
        var stack: [TreeWalker.Pending]
        var busy = 0
    }
    private let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)

    init(_ top: TreeWalker.Pending) { state = Mutex(State(stack: [top])) }

    /// The next directory to read, waiting while others may still add some; nil when the walk is over.
    func next() -> TreeWalker.Pending? {
        while true {
            let (item, over) = state.withLock { s -> (TreeWalker.Pending?, Bool) in
                if let item = s.stack.popLast() { s.busy += 1; return (item, false) }
                return (nil, s.busy == 0)
            }
            if let item { return item }
            if over { wake.signal(); return nil }   // pass the news on to the other walkers
            wake.wait()
        }
    }

    /// Marks one directory read, making its subdirectories available.
    func finished(adding children: some Sequence<TreeWalker.Pending>) {
        let (added, over) = state.withLock { s -> (Int, Bool) in
            let before = s.stack.count
            s.stack.append(contentsOf: children)
            s.busy -= 1
            return (s.stack.count - before, s.stack.isEmpty && s.busy == 0)
        }
        for _ in 0..<(over ? 1 : min(added, 2)) { wake.signal() }
    }
}

/// A directory descriptor shared by the children still to be opened from it; closed with its last user.
final class SharedDescriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { Syscall.close(fd) }
}

/// A bounded hand-off of walked directories from the walking thread to the watcher's queue.
final class WalkChannel: Sendable {
    private let items = Mutex<[TreeWalker.Directory]>([])
    private let available = DispatchSemaphore(value: 0)
    private let space: DispatchSemaphore
    private let finished = Atomic<Bool>(false)
    let cancelled = Atomic<Bool>(false)

    init(capacity: Int = 256) { space = DispatchSemaphore(value: capacity) }

    func put(_ d: TreeWalker.Directory) {
        space.wait()
        items.withLock { $0.append(d) }
        available.signal()
    }

    func finish() {
        finished.store(true, ordering: .releasing)
        available.signal()
    }

    /// The next directory, or nil once the walk finished and everything was taken.
    func take() -> TreeWalker.Directory? {
        while true {
            available.wait()
            let next: TreeWalker.Directory? = items.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let next {
                space.signal()
                return next
            }
            if finished.load(ordering: .acquiring) { available.signal(); return nil }
        }
    }
}

import Dispatch
