import CacheWardenFilesystem

extension Watcher {
    /// Whether the client of one of the named directories of `settings` (all when `names` is empty) holds its
    /// lock now (`client_lock`), found by taking each directory's locks and releasing them at once; nothing else
    /// is read. What `cachewarden clear` without a daemon waits on before it reads the trees. Nil: none is held.
    public static func clientLockBusy(_ settings: WardenSettings, names: [String] = []) -> ClientLockBusy? {
        let cwd = PathResolver.currentDirectory()
        for dir in settings.resolved().directories where names.isEmpty || names.contains(dir.name) {
            guard let locks = dir.clientLock, !locks.isEmpty,
                let root = try? Syscall.canonicalPath(PathResolver.absolute(dir.path, relativeTo: cwd))
            else { continue }
            switch locks.tryTake(rootPath: root, dir: dir.name, scope: .root) {
            case .success(let held): held.release()
            case .failure(let busy): return busy
            }
        }
        return nil
    }

    /// How long a trim may wait for a client's lock before an `error` line says so (`client_lock_wait`, seconds):
    /// how long `cachewarden trim` and `clear` wait by default.
    public var clientLockWait: Int64 { engine.queue.sync { engine.state.settings.clientLockWait } }
}
