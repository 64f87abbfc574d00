import CacheWarden
import CacheWardenFilesystem
import Dispatch
import Glibc
import SystemPackage

/// The floor of an index on this machine: the kernel work of a walk and nothing else, on as many threads as
/// CacheWarden walks with. Each thread takes a directory from a shared stack, lists it with `getdents64`, opens
/// each subdirectory (`openat`, `O_NOFOLLOW`) onto the stack and `fstatat`s everything else — what `du -s` asks
/// the kernel, spread over the cores. No ledger, no checks, no events. `watches` inotify instances (0, 1 or 2)
/// each watch every directory before it is read, with the masks of CacheWarden's two (changes, and opens for
/// `spare_open`).
///
/// A ratio of this walk to `du -s` is the best a walk that stats every file and watches every folder before
/// reading it can do here; CacheWarden's index is judged against both (docs/performance.md, "Index floor").
struct StatWalkFloor {
    var threads: Int
    var watches: Int

    struct Outcome {
        var seconds: Double
        /// Regular files statted (to check the walk saw the whole tree).
        var files: Int
    }

    /// Watch masks: CacheWarden's changes instance and its opens instance (its descriptor adds the flags).
    static let masks: [UInt32] = [InotifyDescriptor.baseEvents, InotifyDescriptor.opensEvents]

    /// Walks `root` once.
    func walk(_ root: String) throws -> Outcome {
        let instances = try (0..<min(watches, Self.masks.count)).map { _ in try InotifyDescriptor() }
        let top = try OwnedDescriptor.opening { open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        let work = SharedWork(top)
        let start = Clock.nanos()
        let walkers = (0..<threads).map { _ in FloorWalker(work: work, watchers: instances) }
        for walker in walkers { CacheWardenFilesystem.Thread { walker.walk() }.start() }
        for walker in walkers { walker.finished.wait() }
        return Outcome(seconds: Clock.seconds(since: start), files: walkers.reduce(0) { $0 + $1.files })
    }
}

/// What one walking thread does.
private final class FloorWalker: @unchecked Sendable { // `files` is read only after `finished`
    private let work: SharedWork<OwnedDescriptor>
    private let watchers: [InotifyDescriptor]
    let finished = DispatchSemaphore(value: 0)
    private(set) var files = 0

    init(work: SharedWork<OwnedDescriptor>, watchers: [InotifyDescriptor]) {
        self.work = work
        self.watchers = watchers
    }

    /// Reads directories from the shared stack (CacheWarden's walkers' `SharedWork`) until the walk is over.
    func walk() {
        let buffer = DirectoryBuffer()
        while let directory = work.next() {
            work.finished(adding: read(directory.fd, into: buffer))
        }
        finished.signal()
    }

    /// Watches and lists one directory, stats its files; returns its subdirectories, open.
    private func read(_ fd: FileDescriptor, into buffer: DirectoryBuffer) -> [OwnedDescriptor] {
        for (watcher, mask) in zip(watchers, StatWalkFloor.masks) {
            _ = try? watcher.addWatch(directory: fd, mask: mask)
        }
        var subdirectories: [OwnedDescriptor] = []
        try? Syscall.readDirectory(fd, fromStart: false, buffer: buffer) { entry in
            if entry.isDirectory || entry.typeUnknown {
                if let child = try? OwnedDescriptor.opening({
                    openat(fd.rawValue, entry.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                }) {
                    subdirectories.append(child)
                    return
                }
                guard entry.typeUnknown else { return }
            }
            var st = stat()
            if fstatat(fd.rawValue, entry.name, &st, AT_SYMLINK_NOFOLLOW) == 0, st.isRegularFile { files += 1 }
        }
        return subdirectories
    }
}
