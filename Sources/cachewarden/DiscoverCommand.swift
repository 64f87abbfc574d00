import CacheWarden
import CacheWardenFilesystem
import CacheWardenCommandLine
import CacheWardenDiscovery
import CacheWardenService
import FoundationEssentials
import Glibc
import SystemPackage

/// `cachewarden discover`: finds this machine's caches, measures them with a read-only scan and proposes a config
/// (a table, `--json`, or `--write FILE`). It deletes nothing and changes nothing but the file it is told to write.
struct DiscoverCommand: CLICommand {
    static let spec = CommandSpec(
        "discover",
        abstract: "Find the caches in your home (and the system's, as root), measure them and propose a config.",
        discussion: """
            Looks in each known tool's cache folder (pip, uv, Go, ccache, sccache, Hugging Face, npm, Yarn, pnpm, \
            cargo, Gradle, Bazel, browsers, thumbnails), honouring XDG_CACHE_HOME and the tools' own variables \
            (GOCACHE, PIP_CACHE_DIR, UV_CACHE_DIR, HF_HOME, CCACHE_DIR, …), and for folders holding a CACHEDIR.TAG; \
            with --system, also nginx's cache paths and tagged folders under /var/cache. Nothing on disk changes. \
            See docs/discover.md for the quota rule.
            """,
        options: [
            .value(
                "home", "dir",
                help: "Search this home instead of yours (your environment's variables are then not used).",
                completion: .directory),
            .flag("system", help: "Also the system's caches (the default for root without --home)."),
            .repeated("include", "glob", help: "Keep only caches whose name or path matches (repeatable)."),
            .repeated("exclude", "glob", help: "Leave out caches whose name or path matches (repeatable)."),
            .value("depth", "levels", help: "Levels searched for CACHEDIR.TAG folders (0: none; default 5)."),
            .value("time-limit", "seconds", help: "Seconds the CACHEDIR.TAG search may take (default 10)."),
            .flag("json", help: "One JSON document instead of a table."),
            .value("write", "file", help: "Write the proposed config to this file (see --force).", completion: .file),
            .flag("force", help: "With --write: replace a file that exists."),
        ]
    )

    var home: String?
    var system: Bool
    var include: [String]
    var exclude: [String]
    var depth: Int
    var timeLimit: Double
    var json: Bool
    var write: String?
    var force: Bool

    init(_ arguments: ParsedArguments) throws {
        home = arguments.value("home")
        system = arguments.flag("system")
        include = arguments.values("include")
        exclude = arguments.values("exclude")
        depth = try arguments.integer("depth", in: 0...64) ?? 5
        timeLimit = try arguments.number("time-limit", in: 0...3600) ?? 10
        json = arguments.flag("json")
        write = arguments.value("write")
        force = arguments.flag("force")
        guard !force || write != nil else { throw arguments.usageError("--force goes with --write FILE") }
    }

    func run() throws {
        let (scope, tildeHome) = try makeScope()
        let discovery = CacheDiscovery(scope: scope)
        let result = discovery.run()
        if !result.tagSearchComplete {
            StandardStreams.error(
                "cachewarden: the CACHEDIR.TAG search stopped after \(timeLimit) s (--time-limit); folders deeper in may be missing\n"
            )
        }
        if let write {
            let searched = [scope.home?.home, scope.system ? "the system" : nil].compactMap { $0 }.joined(
                separator: " and ")
            var config = ProposedConfig(result: result, rule: discovery.rule, searched: searched, tildeHome: tildeHome)
            config.serviceWritable =
                tildeHome.map(ProposedConfig.userUnitWritable)
                ?? (geteuid() == 0 ? ProposedConfig.systemUnitWritable : nil)
            try writeConfig(config, to: write)
        }
        if json { print(result.jsonLine(), terminator: "") } else if write == nil { DiscoveryTable.print(result) }
    }

    /// The scope the flags describe, and the home whose paths the config may write as `~/…` (one's own only).
    private func makeScope() throws -> (DiscoveryScope, String?) {
        let locations = DefaultLocations.current
        let ownHome = locations.home.flatMap { try? Syscall.canonicalPath($0) }
        var homeLocations: CacheLocations?
        if let home {
            guard let real = try? Syscall.canonicalPath(home), PathResolver.directoryProblem(real) == nil else {
                throw CLIUsageError(message: "--home \(home): not an existing directory")
            }
            // Another user's home: this process's variables describe its own caches, not theirs.
            homeLocations = CacheLocations(
                home: real, environment: real == ownHome ? ProcessEnvironment.variables : [:])
        } else if let ownHome {
            homeLocations = CacheLocations(home: ownHome, environment: ProcessEnvironment.variables)
        }
        var scope = DiscoveryScope(home: homeLocations)
        scope.system = system || (home == nil && locations.euid == 0)
        scope.confineToHome = homeLocations.map { $0.home != ownHome } ?? false
        scope.include = include
        scope.exclude = exclude
        scope.configFile = write.map { PathResolver.absolute($0, relativeTo: PathResolver.currentDirectory()) }
        scope.tagDepth = depth
        scope.tagTimeLimit = .milliseconds(Int64(timeLimit * 1000))
        return (scope, homeLocations?.home == ownHome && locations.euid != 0 ? ownHome : nil)
    }

    /// Writes the config (creating its folder), after checking that it reads back as valid settings.
    private func writeConfig(_ config: ProposedConfig, to file: String) throws {
        let text = config.text
        let path = PathResolver.absolute(file, relativeTo: PathResolver.currentDirectory())
        do { _ = try WardenSettings.parse(text, source: path, relativeTo: PathResolver.parent(of: path)) } catch {
            // Registering nothing is valid (nothing was found); anything else is a bug of the writer.
            guard error.registersNothing else {
                throw CLIUsageError(message: "the proposed config does not read back (\(error)); nothing written")
            }
        }
        PathResolver.createDirectories(PathResolver.parent(of: path))
        do throws(Errno) { try AtomicFile.replace(path, with: Array(text.utf8), replacing: force) } catch {
            if error == .fileExists {
                throw CLIUsageError(message: "\(file) exists; give --force to replace it (nothing written)")
            }
            throw CLIUsageError(message: "cannot write \(file): \(error)")
        }
        let n = config.result.caches.filter { $0.problem == nil }.count
        StandardStreams.error(
            "cachewarden: wrote \(file) with \(n) \(n == 1 ? "cache" : "caches"); check it with `cachewarden check --config \(file)`\n"
        )
    }
}
