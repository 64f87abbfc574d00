import Glibc
import SystemPackage

/// Removes a directory and everything in it through descriptors only, as systemd's `rm_rf_children` does: each
/// directory is opened from its parent's descriptor (`O_NOFOLLOW`, never into another mount: `RESOLVE_NO_XDEV`),
/// read with `getdents64`, its files and symlinks unlinked by name there (a symlink is removed, never followed),
/// and itself removed once empty. No path string is resolved, so nothing swapped in on the way can lead it out
/// of the tree it was given. Iterative (a stack of open directories), so a tree thousands of levels deep cannot
/// exhaust a thread's stack. For what CacheWarden has already taken out of its clients' view (the trash folder).
package struct TreeRemover {
    /// One directory being emptied: its descriptor, its name in its parent, and its subdirectories still to go.
    private struct Frame {
        var folder: OwnedDescriptor
        var name: [UInt8]
        var subdirectories: [[UInt8]] = []
    }

    /// Files and directories removed, and the first error met (what failed stays; the rest is removed).
    package private(set) var removed = 0
    package private(set) var firstError: Errno?
    private let buffer = DirectoryBuffer()

    package init() {}

    /// Removes `name` in the directory `parent`: a directory with everything in it, anything else by `unlinkat`.
    @discardableResult
    package mutating func removeEntry(_ name: [UInt8], in parent: FileDescriptor) -> Bool {
        guard let st = try? name.withCString({ n throws(Errno) in try Syscall.lstat(at: parent, n) }) else {
            return false
        }
        if st.isDirectory { return remove(name, in: parent) }
        do throws(Errno) { try name.withCString { n throws(Errno) in try Syscall.unlink(at: parent, n) } } catch {
            note(error)
            return false
        }
        removed += 1
        return true
    }

    /// Removes `name` in the directory `parent` with everything in it; returns whether it is gone.
    @discardableResult
    package mutating func remove(_ name: [UInt8], in parent: FileDescriptor) -> Bool {
        guard let top = open(name, in: parent) else { return false }
        var stack = [top]
        while !stack.isEmpty {
            if let next = stack[stack.count - 1].subdirectories.popLast() {
                if let child = open(next, in: stack[stack.count - 1].folder.fd) { stack.append(child) }
                continue
            }
            let done = stack.removeLast()
            let parentFD = stack.last?.folder.fd ?? parent
            do throws(Errno) {
                try done.name.withCString { n throws(Errno) in try Syscall.unlink(at: parentFD, n, directory: true) }
                removed += 1
            } catch {
                note(error)
            }
        }
        return firstError == nil
    }

    /// Opens directory `name` of `parent` for listing, unlinks what in it is not a directory, and lists its
    /// subdirectories; nil (the error noted) when it cannot be opened.
    private mutating func open(_ name: [UInt8], in parent: FileDescriptor) -> Frame? {
        // Never through a symlink nor into another mount (without openat2: another filesystem's, by the device).
        let opened = name.withCString { n in
            Result { () throws(Errno) in try Syscall.openDirectoryNotCrossing(at: parent, n) }
        }
        let folder: OwnedDescriptor
        switch opened {
        case .success(let d): folder = d
        case .failure(let e): note(e); return nil
        }
        let fd = folder.fd
        Self.restoreOwnerWrite(fd)
        var frame = Frame(folder: folder, name: name)
        var files: [[UInt8]] = []
        do throws(Errno) {
            try Syscall.readDirectory(fd, buffer: buffer) { entry in
                let bytes = Array(UnsafeRawBufferPointer(start: entry.name, count: strlen(entry.name)))
                if entry.isDirectory {
                    frame.subdirectories.append(bytes)
                } else if entry.typeUnknown {
                    let st = try? Syscall.lstat(at: fd, entry.name)
                    if st?.isDirectory == true { frame.subdirectories.append(bytes) } else { files.append(bytes) }
                } else {
                    files.append(bytes)
                }
            }
        } catch { note(error) }
        for file in files {
            do throws(Errno) {
                try file.withCString { n throws(Errno) in try Syscall.unlink(at: fd, n) }; removed += 1
            } catch { note(error) }
        }
        return frame
    }

    /// A folder its owner made read-only (Go's module cache makes every folder `0555`) cannot be emptied until
    /// its owner's write bit is back. What this remover is given has left its client's view and is going, so the
    /// bits are set back, as `go clean -modcache` does; only on a folder of this process's own user (anyone
    /// else's cannot be changed, and the survey refuses a unit holding one).
    private static func restoreOwnerWrite(_ fd: FileDescriptor) {
        guard geteuid() != 0, let st = try? Syscall.fstat(fd), st.st_uid == geteuid(), st.st_mode & S_IRWXU != S_IRWXU
        else { return }
        try? Syscall.changeMode(fd, to: (st.st_mode & 0o7777) | S_IRWXU)
    }

    private mutating func note(_ error: Errno) {
        if firstError == nil && error != .noSuchFileOrDirectory { firstError = error }
    }
}
