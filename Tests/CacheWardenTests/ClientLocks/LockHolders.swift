import Foundation
import Glibc
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// A lock the test process itself holds on a file, through an open file description of its own: the watcher's
/// take, through another, conflicts with it as with any other process's (`flock`: `LOCK_SH`, as uv and cargo hold
/// their caches while they run).
final class HeldByTest: @unchecked Sendable {
    private var fd: Int32
    private let path: String

    init(_ path: String, exclusive: Bool = false) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        precondition(fd >= 0, "open \(path): \(errno)")
        precondition(flock(fd, exclusive ? LOCK_EX : LOCK_SH) == 0, "flock \(path): \(errno)")
    }

    /// Closes the descriptor, and waits until the lock is free: a child another test is starting holds a copy of
    /// every descriptor between its fork and its exec (close-on-exec), and the lock with it.
    func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
        _ = eventually(timeout: 5) { !isFlocked(path) }
    }

    deinit { release() }
}

/// Whether anyone holds a lock `flock(LOCK_EX | LOCK_NB)` conflicts with on `path` (tried and released at once).
func isFlocked(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return flock(fd, LOCK_EX | LOCK_NB) != 0
}

/// A child process holding a lock on a file until the test lets it go (SIGKILL: a child of the test runner
/// ignores SIGTERM) or drops it.
final class LockHolderProcess: @unchecked Sendable {
    let cli: RunningCLI
    /// Another process left holding the lock (a forked child), killed with the holder.
    private(set) var heir: Int32?

    var pid: Int32 { cli.process.processIdentifier }

    private init(_ cli: RunningCLI) { self.cli = cli }

    /// util-linux `flock(1)` taking `path` (shared by default), then running `sleep 600` in its place (`--no-fork`:
    /// one process, the lock's descriptor inherited, no orphan left holding the test's pipes); back once the kernel
    /// lists the lock. Its command line is then `sleep 600`, its name (`comm`) `sleep`. `ownMounts`: run by
    /// `unshare -m` (root only), in a mount namespace of its own, as a daemon under `ProtectSystem=` sees one.
    static func flock(_ path: String, shared: Bool = true, ownMounts: Bool = false) throws -> LockHolderProcess {
        let arguments = ["--no-fork", shared ? "-s" : "-x", path, "sleep", "600"]
        let holder = LockHolderProcess(
            try ownMounts
                ? RunningCLI(unshare + ["/usr/bin/flock"] + arguments, executable: "/usr/bin/unshare")
                : RunningCLI(arguments, executable: "/usr/bin/flock"))
        // Listed once flock(1) has the lock; `sleep 600` once it has run it in its place.
        let command = "/proc/\(holder.pid)/cmdline"
        precondition(
            eventually {
                isListed(path) && (try? String(contentsOfFile: command, encoding: .utf8)) == "sleep\u{0}600\u{0}"
            },
            "flock(1) did not take \(path): \(holder.cli.stderr)")
        return holder
    }

    /// python3 running `script` on `path` (its `sys.argv[1]`); back once it prints its first line (`locked`, or
    /// the pid of a child left holding the lock, which becomes `heir`).
    static func python(_ script: String, _ path: String, ownMounts: Bool = false) throws -> LockHolderProcess {
        let python = which("python3") ?? "/usr/bin/python3"
        let holder = LockHolderProcess(
            try ownMounts
                ? RunningCLI(unshare + [python, "-c", script, path], executable: "/usr/bin/unshare")
                : RunningCLI(["-c", script, path], executable: python))
        precondition(eventually { !holder.cli.lines.isEmpty }, "python did not lock \(path): \(holder.cli.stderr)")
        holder.heir = Int32(holder.cli.lines[0])
        return holder
    }

    /// `unshare(1)`'s arguments for a mount namespace of its own (it then runs the command in its place).
    static let unshare = ["-m", "--propagation", "private"]

    /// Whether `unshare -m` can run here: as root, with util-linux's `unshare`.
    static var canUnshareMounts: Bool { getuid() == 0 && access("/usr/bin/unshare", X_OK) == 0 }

    /// Whether process `pid` is in another mount namespace than this one.
    static func hasOwnMounts(_ pid: Int32) -> Bool {
        (Syscall.readLink("/proc/\(pid)/ns/mnt") ?? "") != (Syscall.readLink("/proc/self/ns/mnt") ?? "")
    }

    /// A POSIX write lock over the whole file (`fcntl.lockf`, `F_SETLK`): what Java's `FileChannel.tryLock` takes.
    static let posixWriteLock =
        "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(600)\n"
    /// An OFD write lock over the whole file: `/proc/locks` shows its pid as -1.
    static let ofdWriteLock =
        "import fcntl, struct, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0))\nprint('locked', flush=True)\ntime.sleep(600)\n"
    /// `flock(LOCK_SH)`, then a fork: the parent prints the child's pid and exits, the child keeps the lock, and
    /// `/proc/locks` goes on naming the parent.
    /// (The child lets go of the test's pipes: a process holding them keeps `Process.waitUntilExit` waiting.)
    static let forkedFlock =
        "import fcntl, os, sys, time\nf = open(sys.argv[1])\nfcntl.flock(f, fcntl.LOCK_SH)\npid = os.fork()\nif pid:\n    print(pid, flush=True)\n    os._exit(0)\nnull = os.open('/dev/null', os.O_RDWR)\nfor fd in (0, 1, 2):\n    os.dup2(null, fd)\ntime.sleep(600)\n"

    /// Ends the holder (and its heir): the lock is released.
    func release() {
        if let heir { kill(heir, SIGKILL) }
        if cli.process.isRunning { cli.signal(SIGKILL) }
        cli.process.waitUntilExit()
        heir = nil // its descriptors close as it dies (a zombie holds no lock)
    }

    deinit { release() }

    /// Whether `/proc/locks` lists a lock on `path`'s inode.
    static func isListed(_ path: String) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0, let locks = procText("/proc/locks") else { return false }
        return locks.split(separator: "\n").contains { !$0.contains("->") && $0.contains(":\(st.st_ino) ") }
    }
}
