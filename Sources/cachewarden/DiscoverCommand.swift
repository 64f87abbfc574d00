import ArgumentParser
import CacheWarden
import CacheWardenDiscovery
import CacheWardenService
import FoundationEssentials
import Glibc
import SystemPackage

/// `cachewarden discover`: finds this machine's caches, measures them with a read-only scan and proposes a config
/// (a table, `--json`, or `--write FILE`). It deletes nothing and changes nothing but the file it is told to write.
struct DiscoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "Find the caches in your home (and the system's, as root), measure them and propose a config.",
        discussion: """
            Looks in each known tool's cache folder (pip, uv, Go, ccache, sccache, Hugging Face, npm, Yarn, pnpm, \
            cargo, Gradle, Bazel, browsers, thumbnails), honouring XDG_CACHE_HOME and the tools' own variables \
            (GOCACHE, PIP_CACHE_DIR, UV_CACHE_DIR, HF_HOME, CCACHE_DIR, …), and for folders holding a CACHEDIR.TAG; \
            with --system, also nginx's cache paths and tagged folders under /var/cache. Nothing on disk changes. \
            See docs/discover.md for the quota rule.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Search this home instead of yours (your environment's variables are then not used).", valueName: "dir"))
    var home: String?

    @Flag(name: .long, help: "Also the system's caches (the default for root without --home).")
    var system = false

    @Option(name: .long, help: ArgumentHelp("Keep only caches whose name or path matches (repeatable).", valueName: "glob"))
    var include: [String] = []

    @Option(name: .long, help: ArgumentHelp("Leave out caches whose name or path matches (repeatable).", valueName: "glob"))
    var exclude: [String] = []

    @Option(name: .long, help: "Levels searched for CACHEDIR.TAG folders (0: none).")
    var depth: Int = 5

    @Option(name: .long, help: ArgumentHelp("Seconds the CACHEDIR.TAG search may take.", valueName: "seconds"))
    var timeLimit: Double = 10

    @Flag(name: .long, help: "One JSON document instead of a table.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Write the proposed config to this file (see --force).", valueName: "file"))
    var write: String?

    @Flag(name: .long, help: "With --write: replace a file that exists.")
    var force = false

    func validate() throws {
        guard depth >= 0 && depth <= 64 else { throw ValidationError("--depth must be from 0 to 64") }
        guard timeLimit >= 0 && timeLimit <= 3600 else { throw ValidationError("--time-limit must be from 0 to 3600 seconds") }
        guard !force || write != nil else { throw ValidationError("--force goes with --write FILE") }
    }

    func run() throws {
        let (scope, tildeHome) = try makeScope()
        let discovery = CacheDiscovery(scope: scope)
        let result = discovery.run()
        if !result.tagSearchComplete {
            StandardStreams.error("cachewarden: the CACHEDIR.TAG search stopped after \(timeLimit) s (--time-limit); folders deeper in may be missing\n")
        }
        if let write {
            let searched = [scope.home?.home, scope.system ? "the system" : nil].compactMap { $0 }.joined(separator: " and ")
            var config = ProposedConfig(result: result, rule: discovery.rule, searched: searched, tildeHome: tildeHome)
            config.serviceWritable = tildeHome.map(ProposedConfig.userUnitWritable) ?? (geteuid() == 0 ? ProposedConfig.systemUnitWritable : nil)
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
            homeLocations = CacheLocations(home: real, environment: real == ownHome ? ProcessInfo.processInfo.environment : [:])
        } else if let ownHome {
            homeLocations = CacheLocations(home: ownHome, environment: ProcessInfo.processInfo.environment)
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
            guard error.registersNothing else { throw CLIUsageError(message: "the proposed config does not read back (\(error)); nothing written") }
        }
        PathResolver.createDirectories(PathResolver.parent(of: path))
        do throws(Errno) { try AtomicFile.replace(path, with: Array(text.utf8), replacing: force) } catch {
            if error == .fileExists { throw CLIUsageError(message: "\(file) exists; give --force to replace it (nothing written)") }
            throw CLIUsageError(message: "cannot write \(file): \(error)")
        }
        let n = config.result.caches.filter { $0.problem == nil }.count
        StandardStreams.error("cachewarden: wrote \(file) with \(n) \(n == 1 ? "cache" : "caches"); check it with `cachewarden check --config \(file)`\n")
    }
}
