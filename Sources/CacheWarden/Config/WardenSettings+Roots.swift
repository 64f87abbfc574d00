extension WardenSettings {
    /// `RootGuard` with these settings' own files (config file, control socket, metrics file).
    var rootGuard: RootGuard {
        let own = [("config file", configFile), ("control socket", controlSocket), ("metrics file", metricsFile)]
        return RootGuard.current(ownFiles: own.compactMap { what, file in file.map { (what, $0) } })
    }

    /// Refuses the first directory (of `only`, else all) whose path cannot be a cache, at the line of its `path`
    /// key when it came from a file; returns the warnings for those `allow_any_path` accepts.
    func checkRoots(only: [DirectorySettings]? = nil) throws(ConfigError) -> [String] {
        let guardian = rootGuard
        var warnings: [String] = []
        for d in only ?? directories {
            let path = PathResolver.absolute(d.path, relativeTo: PathResolver.currentDirectory())
            switch guardian.verdict(name: d.name, path: path, allowAnyPath: d.allowAnyPath) {
            case .allowed: break
            case .allowedWithWarning(let text): warnings.append((d.origin.map { "\($0.file):\($0.line): " } ?? "") + text)
            case .refused(let why): throw ConfigError(file: d.origin?.file, line: d.origin?.line, message: "dir.\(d.name).path: \(why)")
            }
        }
        return warnings
    }

    /// The warnings of `checkRoots()` (paths accepted only by `allow_any_path`), for `cachewarden check`.
    package var rootWarnings: [String] { (try? checkRoots()) ?? [] }
}
