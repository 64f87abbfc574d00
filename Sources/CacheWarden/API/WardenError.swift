import Glibc
import SystemPackage

/// Why the watcher cannot do what was asked, and what to do about it.
public enum WardenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The settings are invalid (the `ConfigError` names the file and line when there is one).
    case invalidSettings(ConfigError)
    /// A registered path does not exist.
    case pathMissing(String)
    /// A registered path is not a directory (or is a symlink, which is never followed).
    case notADirectory(String)
    /// A registered path or one of its subdirectories cannot be read.
    case permissionDenied(String)
    /// A directory could not be watched: the kernel's per-user watch limit (`fs.inotify.max_user_watches`) is
    /// reached, not the disk.
    case watchLimitReached(path: String, maxUserWatches: Int)
    /// The kernel refused a new change-notification instance: the per-user instance limit (`EMFILE`) or
    /// another system error.
    case inotifyUnavailable(String)
    /// `start()` was called on a running watcher.
    case alreadyRunning
    /// The call needs a running watcher.
    case notRunning
    /// No registered directory has this name.
    case unknownDirectory(String)
    /// A directory with this name is already registered.
    case duplicateDirectory(String)
    /// Another system call failed.
    case system(operation: String, path: String, errno: Int32)
    /// The watcher runs in observe mode: it reports and never deletes.
    case readOnly
    /// A registered directory that was lost came back on another filesystem or mount than the one it was
    /// registered on (the folder under an unmounted root, a bind mount at its path): it is not taken back.
    case rootElsewhere(String)
    /// A registered directory holds something named as CacheWarden's trash folder that CacheWarden did not make.
    case foreignTrash(String)
    /// The cache's own client holds its lock (`client_lock`): nothing was deleted; try again once it is released.
    /// Or (`why` `.vanished`) a lock changed while the trim held it: it stopped there, after what it had deleted.
    case clientLockBusy(ClientLockBusy)

    /// What went wrong and what to do about it, on one line.
    public var description: String {
        switch self {
        case .invalidSettings(let e): return e.description
        case .pathMissing(let p): return "\(p) does not exist: create it or fix the registered path"
        case .notADirectory(let p):
            return "\(p) is not a directory (symlinks are never followed): register a real directory"
        case .permissionDenied(let p): return "\(p): permission denied: run as a user who can read and delete there"
        case .watchLimitReached(let p, let max):
            return "cannot watch \(p): the inotify watch limit (fs.inotify.max_user_watches = \(max)) is reached, "
                + "not the disk; raise it with `sysctl fs.inotify.max_user_watches=\(max > 0 ? max * 4 : 524288)`"
        case .inotifyUnavailable(let why):
            return
                "cannot create an inotify instance (\(why)); raise fs.inotify.max_user_instances or stop other watchers"
        case .alreadyRunning: return "the watcher is already running: call stop() first"
        case .notRunning: return "the watcher is not running: call start() first"
        case .unknownDirectory(let n): return "no registered directory is named \(n)"
        case .duplicateDirectory(let n): return "a directory named \(n) is already registered: pick another name"
        case .system(let op, let p, let e): return "\(op) \(p): \(String(cString: strerror(e)))"
        case .readOnly:
            return "this watcher runs in observe mode and never deletes: use mode .enforce (or `cachewarden run`)"
        case .foreignTrash(let p):
            return
                "\(p)/\(TrashFolder.name) is not CacheWarden's trash folder (it holds what CacheWarden did not put there); "
                + "CacheWarden moves what it deletes there and will not touch what it did not make: move it away"
        case .rootElsewhere(let p):
            return
                "\(p) is back on another filesystem or mount than the one it was registered on (`cachewarden reload` registers it anew)"
        case .clientLockBusy(let busy):
            // A lock lost during the trim stopped it after what it had deleted; one held kept it from starting.
            return busy.why == .vanished
                ? "\(busy); the trim stopped there: try again"
                : "\(busy); nothing was deleted: try again once it is released"
        }
    }

    /// The error a failed system call on a registered path means.
    static func path(_ error: Errno, _ path: String) -> WardenError {
        switch error {
        case .noSuchFileOrDirectory, .staleNFSFileHandle: return .pathMissing(path)
        case .notDirectory, .tooManySymbolicLinkLevels: return .notADirectory(path)
        case .permissionDenied, .notPermitted: return .permissionDenied(path)
        default: return .system(operation: "open", path: path, errno: error.rawValue)
        }
    }

    /// The `kind` of the `error` event that reports this error at run time.
    var issueKind: String {
        switch self {
        case .watchLimitReached: "watch_limit"
        case .permissionDenied: "permission"
        case .pathMissing: "missing"
        case .rootElsewhere: "root_moved"
        default: "scan"
        }
    }
}
