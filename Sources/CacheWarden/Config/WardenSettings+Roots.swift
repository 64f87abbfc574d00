extension WardenSettings {
    /// `RootGuard` with these settings' own files (config file, control socket, metrics file).
    var rootGuard: RootGuard {
        let own = [("config file", configFile), ("control socket", controlSocket), ("metrics file", metricsFile)]
        return RootGuard.current(ownFiles: own.compactMap { what, file in file.map { (what, $0) } })
    }

    /// Refuses the first directory (of `only`, else all) whose path cannot be a cache, at the line of its `path`
    /// key when it came from a file; returns the warnings for those `allow_any_path` accepts. `guardian` (by
    /// default a new one) may be shared by the checks of one registration pass.
    func checkRoots(only: [DirectorySettings]? = nil, guardian: RootGuard? = nil) throws(ConfigError) -> [String] {
        let guardian = guardian ?? rootGuard
        let cwd = PathResolver.currentDirectory()
        var warnings: [String] = []
        for d in only ?? directories {
            var d = d
            d.path = PathResolver.absolute(d.path, relativeTo: cwd)
            if let w = try checkRoot(d, guardian: guardian) { warnings.append(w) }
            try checkTrash(d)
        }
        return warnings
    }

    /// `RootGuard`'s verdict on `d` (its path absolute) as a config error at the line of its `path` key, or the
    /// warning of a path `allow_any_path` accepts. `folder`: what the engine opened there (by default, what the
    /// path shows now).
    func checkRoot(_ d: DirectorySettings, guardian: RootGuard, folder: FolderIdentity? = nil) throws(ConfigError)
        -> String?
    {
        let creating = folder == nil && d.createIfMissing && PathResolver.isMissing(d.path)
        switch guardian.verdict(
            name: d.name, path: d.path, allowAnyPath: d.allowAnyPath, creating: creating, folder: folder)
        {
        case .allowed: return nil
        case .allowedWithWarning(let text): return (d.origin.map { "\($0.file):\($0.line): " } ?? "") + text
        case .refused(let why):
            throw ConfigError(file: d.origin?.file, line: d.origin?.line, message: "dir.\(d.name).path: \(why)")
        }
    }

    /// Refuses `d` when its folder holds something of the trash's name that CacheWarden did not make (see
    /// `TrashFolder`): `check` says so as `run` would.
    func checkTrash(_ d: DirectorySettings) throws(ConfigError) {
        guard TrashFolder.isForeign(in: d.path) else { return }
        throw ConfigError(
            file: d.origin?.file, line: d.origin?.line,
            message: "dir.\(d.name).path: \(WardenError.foreignTrash(d.path).description)")
    }

    /// The warnings of `checkRoots()` (paths accepted only by `allow_any_path`), for `cachewarden check`.
    package var rootWarnings: [String] { (try? checkRoots()) ?? [] }

    /// Keys that do nothing as they are set, for `cachewarden check`: `evict_pointers` without `evict_unit` (its
    /// pointers go with units, and files go one by one).
    package var keyWarnings: [String] {
        directories.filter { !$0.evictPointers.isEmpty && $0.evictUnit == .file }.map { d in
            (d.origin.map { "\($0.file):\($0.line): " } ?? "")
                + "dir.\(d.name).evict_pointers does nothing with evict_unit = file: pointers go with units"
        }
    }
}
