// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "CacheWarden",
    products: [
        .library(name: "CacheWarden", targets: ["CacheWarden"]),
        .executable(name: "cachewarden", targets: ["cachewarden"]),
        .executable(name: "cachewarden-bench", targets: ["cachewarden-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The C shim over <sys/inotify.h>: record decoding and mask constants Swift cannot import,
        // plus the libinotifytools helpers that are safe to share (mask names, kernel limits).
        // Imported by the inotify backend only.
        .target(
            name: "CInotify",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("inotifytools")]
        ),
        // The C shim over <sys/fanotify.h>: event decoding (records with file handles and names), the FAN_*
        // constants, name_to_handle_at. Imported by the fanotify backend only.
        .target(name: "CFanotify"),
        // The C shim under the filesystem layer and engine: statx birth times, malloc_trim (see CWardenShims.h).
        .target(name: "CWardenShims"),
        // The filesystem layer, at the bottom: the one place system calls are made and retried (`Syscall`),
        // descriptors that close themselves, directory listing, the tree walker, and a unit's survey and removal
        // through descriptors only. A target of its own so that it names nothing above it: no ledger node, no
        // backend, policy or setting; what it needs of them (the watch of a directory, the `exclude` globs, how a
        // file is counted) is handed down as hooks and values. The ledger, beside it, makes no system call.
        .target(
            name: "CacheWardenFilesystem",
            dependencies: ["CWardenShims", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The ledger of sizes: pure bookkeeping, no system calls, and nothing of the pipeline. Its storage is
        // internal to it, so only its own methods change it; the pipeline sees what is `package`.
        .target(
            name: "CacheWardenLedger",
            dependencies: [
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "BitCollections", package: "swift-collections"),
            ]
        ),
        // The pipeline: backend → ledger → policies → evictor → sinks, above the ledger and the filesystem layer.
        .target(
            name: "CacheWarden",
            dependencies: [
                "CacheWardenFilesystem",
                "CacheWardenLedger",
                "CInotify",
                "CFanotify",
                "CWardenShims",
                .product(name: "SystemPackage", package: "swift-system"),
                // OrderedCollections alone: the `Collections` umbrella linked every module of the package
                // (ropes, hash trees, bit sets, …, all in the static binary) for one OrderedDictionary.
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What the daemon adds around the library, used by the CLI: the control socket (server, client, protocol),
        // systemd readiness/watchdog/status, and the Prometheus metrics file. Not part of what an embedder uses.
        .target(
            name: "CacheWardenService",
            dependencies: [
                "CacheWarden",
                "CacheWardenFilesystem",
                // For the journal's SCM_RIGHTS datagram (`cwsys_send_descriptor`: the CMSG_* macros are C only).
                "CWardenShims",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `cachewarden discover`: finds the caches of a home (each tool's known place, CACHEDIR.TAG folders) and of
        // the system (nginx's cache paths), measures them read-only and proposes a config.
        .target(
            name: "CacheWardenDiscovery",
            dependencies: [
                "CacheWarden",
                "CacheWardenFilesystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The command line's parser, help, completion scripts and manual pages (cachewarden.1, cachewarden.conf.5),
        // used by the CLI and the benchmark. Not swift-argument-parser: see CommandLineParser.swift for why.
        .target(
            name: "CacheWardenCommandLine",
            dependencies: ["CacheWarden"]
        ),
        // The command-line client: one struct per subcommand.
        .executableTarget(
            name: "cachewarden",
            dependencies: [
                "CacheWarden",
                "CacheWardenFilesystem",
                "CacheWardenService",
                "CacheWardenDiscovery",
                "CacheWardenCommandLine",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The benchmark (release mode): CacheWarden beside du and inotifywait on the same trees.
        .executableTarget(
            name: "cachewarden-bench",
            dependencies: [
                "CacheWarden",
                "CacheWardenFilesystem",
                "CacheWardenService",
                "CacheWardenCommandLine",
                // `cwsys_rename_noreplace` for the trash path's floor (UnlinkFloor.swift).
                "CWardenShims",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Examples/embed: the README's "Use it as a library" snippet, compiled.
        .executableTarget(
            name: "embed-example",
            dependencies: ["CacheWarden"],
            path: "Examples/embed"
        ),
        .testTarget(
            name: "CacheWardenTests",
            dependencies: [
                "CacheWarden", "CacheWardenFilesystem", "CacheWardenLedger", "CacheWardenService",
                "CacheWardenDiscovery", "CacheWardenCommandLine", "CInotify",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
