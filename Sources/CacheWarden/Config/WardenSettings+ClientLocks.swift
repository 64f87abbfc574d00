import CacheWardenFilesystem

/// The rules of `client_lock` that need more than its own value: units for per-unit locks, and lock files that can
/// be locks (see `ClientLocks`).
extension DirectorySettings {
    /// What is wrong with the lock files this directory's client lock names outright (with its profile's), or nil.
    /// A root that does not exist yet (`create`) has none.
    func clientLockProblem() -> String? {
        guard let locks = resolved().clientLock, !locks.isEmpty,
            let root = try? Syscall.canonicalPath(
                PathResolver.absolute(path, relativeTo: PathResolver.currentDirectory()))
        else { return nil }
        return locks.problem(rootPath: root).map {
            "\($0); expected the lock file the client takes (a regular file), or nothing there"
        }
    }
}

extension WardenSettings {
    /// Per-unit locks (`{unit}`) need units to be taken for (`evict_unit = entry | depth:N`); the lock files of
    /// every directory must be lock files (settings built in code; a config file's are checked at their line).
    func validateClientLocks(checkingFiles: Bool) throws(ConfigError) {
        for d in directories {
            let resolved = d.resolved()
            let p = "dir.\(d.name)."
            if let locks = resolved.clientLock, !locks.perUnit.isEmpty, resolved.evictUnit == .file {
                let key =
                    d.explicit.contains(.clientLock) || !d.explicit.contains(.evictUnit)
                    ? p + "client_lock" : p + "evict_unit"
                throw ConfigError(
                    key: key,
                    message:
                        "\(p)client_lock takes locks per unit ({unit}), but \(p)evict_unit is file; set evict_unit = entry or depth:N, or \(p)client_lock = none"
                )
            }
            if checkingFiles, let problem = d.clientLockProblem() {
                throw ConfigError(key: p + "client_lock", message: "\(p)client_lock: \(problem)")
            }
        }
    }
}
