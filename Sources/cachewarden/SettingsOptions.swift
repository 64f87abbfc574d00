import FoundationEssentials
import ArgumentParser
import CacheWarden

/// Where the settings come from: a config file, or one directory given on the command line.
struct SettingsOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("The key = value config file.", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Watch this one directory (quick mode, without a config file); it is named after its last path component.", valueName: "path"))
    var dir: String?

    @Option(name: .long, help: ArgumentHelp("Quota for --dir, e.g. 500MB or 2GiB (0: none).", valueName: "size"))
    var quota: String?

    @Option(name: .long, help: ArgumentHelp("Age limit for --dir: 3d, 1w, 2w, 1mo, <N>s|m|h|d|w, or manual.", valueName: "age"))
    var maxAge: String?

    @Flag(name: .long, help: "Accept a --dir that CacheWarden refuses as no cache (a system folder, a home directory or a folder holding one).")
    var allowAnyPath = false

    @Option(name: .long, help: ArgumentHelp("How sizes are counted: allocated (blocks, like du) or apparent (bytes).", valueName: "basis"))
    var sizeBasis: String?

    /// The settings these options describe; errors name the file and line, or the flag.
    func load() throws -> WardenSettings {
        switch (config, dir) {
        case (let file?, nil):
            guard quota == nil, maxAge == nil, sizeBasis == nil, !allowAnyPath else {
                throw CLIUsageError(message: "--quota, --max-age, --size-basis and --allow-any-path go with --dir; with --config set them in the file")
            }
            return try WardenSettings.load(configFile: file)
        case (nil, let path?):
            var lines = ["dir.\(Self.name(for: path)).path = \(Self.literal(path))"]
            if let quota { lines.append("dir.\(Self.name(for: path)).quota = \(quota)") }
            if let maxAge { lines.append("dir.\(Self.name(for: path)).max_age = \(maxAge)") }
            if let sizeBasis { lines.append("size_basis = \(sizeBasis)") }
            if allowAnyPath { lines.append("dir.\(Self.name(for: path)).allow_any_path = true") }
            // The quick mode goes through the same parser as a file, so its values get the same checks.
            do {
                return try WardenSettings.parse(lines.joined(separator: "\n"), source: "command line", relativeTo: nil)
            } catch {
                throw CLIUsageError(message: error.message.replacing("allow_any_path = true", with: "allow_any_path")
                    .replacing("dir.\(Self.name(for: path)).", with: "--")
                    .replacing("max_age", with: "max-age").replacing("allow_any_path", with: "allow-any-path").replacing("size_basis", with: "--size-basis"))
            }
        case (nil, nil):
            throw DefaultConfig.missing()
        case (_?, _?):
            throw CLIUsageError(message: "give either --config or --dir, not both")
        }
    }

    /// A valid directory name from a path's last component.
    static func name(for path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let parts = absolute.split(separator: "/").filter { $0 != "." }
        let last = parts.last.map(String.init) ?? "root"
        let cleaned = String(last.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
        return cleaned.isEmpty ? "root" : cleaned
    }
}
