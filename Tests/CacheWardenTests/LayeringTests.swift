import Foundation
import Testing

/// The pipeline's shape, read from the sources: the rules docs/design.md states that the compiler cannot keep.
/// The ledger (`CacheWardenLedger`) and the filesystem layer (`CacheWardenFilesystem`) are targets of their own, so
/// neither can name the pipeline (nor each other) and nothing outside the ledger can write its storage: the build
/// keeps that. What stays here is what lives inside one module (backends, policies and eviction are folders of
/// `CacheWarden`) and what those two targets may depend on.
@Suite struct LayeringTests {
    /// The checkout, from this file's place in it.
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    /// Sources/CacheWarden.
    static let library = checkout + "/Sources/CacheWarden"

    /// (relative path, text) of every Swift file under `folder` (relative to `base`).
    static func sources(in folder: String, of base: String = library) -> [(String, String)] {
        let root = base + "/" + folder
        let files = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).filter {
            $0.hasSuffix(".swift")
        }
        return files.sorted().compactMap { f in
            (try? String(contentsOfFile: root + "/" + f, encoding: .utf8)).map { (folder + "/" + f, $0) }
        }
    }

    /// Code lines only: `///` and `//` comments may name anything.
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n")
    }

    /// The types a folder of the library declares.
    static func declaredTypes(in folder: String) throws -> [String] {
        let declaration = try Regex("(?m)^(?:final |package |public )*(?:class|struct|enum|protocol) ([A-Z]\\w*)")
        return sources(in: folder).flatMap { _, text in
            code(text).matches(of: declaration).compactMap { $0.output[1].substring.map(String.init) }
        }
    }

    /// The places in `folders` whose code names one of `types` (as a whole word).
    static func mentions(of types: [String], in folders: [String]) throws -> [String] {
        var found: [String] = []
        for folder in folders {
            for (path, text) in sources(in: folder) {
                let body = code(text)
                for name in types where body.contains(try Regex("\\b\(name)\\b")) { found.append("\(path): \(name)") }
            }
        }
        return found
    }

    @Test func policiesAndEvictionNameNoBackend() throws {
        let backendTypes =
            try ["Backends", "Backends/Inotify", "Backends/Fanotify", "Backends/Poll"].flatMap(Self.declaredTypes)
            + ["WatchPort", "WatchHandle", "DirectoryWatcher"]
        #expect(backendTypes.contains("InotifyBackend"), "the sources were not found at \(Self.library)")
        for name in ["FanotifyBackend", "PollBackend", "RoutingBackend", "ChangeBackend", "BackendFactory"] {
            #expect(backendTypes.contains(name), "\(name) is not declared under Backends/")
        }
        // `Change` is what the backend hands the updater; the later stages never see it either.
        let found = try Self.mentions(of: Array(Set(backendTypes)).sorted(), in: ["Policies", "Eviction"])
        #expect(found.isEmpty, "\(found)")
    }

    @Test func backendsNameNoPolicyAndNoEvictor() throws {
        let later = try Self.declaredTypes(in: "Policies") + Self.declaredTypes(in: "Eviction")
        for name in ["CleaningPolicy", "QuotaPolicy", "Evictor", "TrimRun", "SafeRemover"] {
            #expect(later.contains(name), "\(name) is not declared under Policies/ or Eviction/")
        }
        let found = try Self.mentions(of: later, in: ["Backends"])
        #expect(found.isEmpty, "\(found)")
    }

    /// The evictor cannot write the ledger because no function of it is given anything it could write through: the
    /// ledger comes as a value, the rest in an `EvictionContext` (docs/design.md, "Targets"). A trim that took the
    /// engine's `PipelineState` (or `inout SizeLedger`) again would reopen the wall; the compiler cannot see that
    /// one is missing, this can.
    @Test func evictionIsGivenNoStateItCouldWriteTheLedgerThrough() throws {
        let sources = Self.sources(in: "Eviction")
        #expect(sources.count > 10, "the eviction sources were not found")
        let writable = try Regex("PipelineState|inout\\s+SizeLedger")
        let found = sources.filter { Self.code($0.1).contains(writable) }.map(\.0)
        #expect(found.isEmpty, "\(found)")
    }

    /// The package's target names (`name: "…"` in Package.swift), and what the target `name`'s own arguments quote
    /// (its dependencies: targets, products, packages), up to the parenthesis that closes its `.target(`.
    static func manifest(target name: String) throws -> (targets: [String], quoted: [String]) {
        let manifest = try String(contentsOfFile: checkout + "/Package.swift", encoding: .utf8)
        let start = try #require(manifest.range(of: "name: \"\(name)\""), "no \(name) target")
        var depth = 1
        var end = start.upperBound
        while end < manifest.endIndex, depth > 0 {
            if manifest[end] == "(" { depth += 1 } else if manifest[end] == ")" { depth -= 1 }
            end = manifest.index(after: end)
        }
        let arguments = String(manifest[start.upperBound..<end])
        let quoted = arguments.matches(of: try Regex("\"([^\"]*)\"")).compactMap {
            $0.output[1].substring.map(String.init)
        }
        // Targets only: a product a target depends on is named `name:` too.
        let targets = manifest.matches(
            of: try Regex("\\.(?:target|executableTarget|testTarget)\\(\\s*name: \"([^\"]+)\"")
        ).compactMap {
            $0.output[1].substring.map(String.init)
        }
        return (targets, quoted)
    }

    /// The imports of `Sources/<target>`'s files of a module `allowed` does not list, as `path: module`; and how
    /// many files were read.
    static func imports(of target: String, outside allowed: Set<String>) throws -> (found: [String], files: Int) {
        let sources = Self.sources(in: "Sources/" + target, of: Self.checkout)
        let imports = try Regex("(?m)^\\s*(?:@\\w+ )*(?:\\w+ )?import (\\w+)")
        var found: [String] = []
        for (path, text) in sources {
            for match in Self.code(text).matches(of: imports) {
                if let module = match.output[1].substring, !allowed.contains(String(module)) {
                    found.append("\(path): \(module)")
                }
            }
        }
        return (found, sources.count)
    }

    /// The ledger's target depends on nothing of the package: no pipeline target and no C shim (it makes no
    /// system calls), read from Package.swift itself; and its sources import only the C library.
    @Test func theLedgerTargetDependsOnNoPipelineTarget() throws {
        let (targets, named) = try Self.manifest(target: "CacheWardenLedger")
        #expect(targets.contains("CacheWarden") && targets.contains("CInotify"), "\(targets)")
        // Only swift-collections may join it (a product of another package, not a target of this one).
        let allowed: Set<String> = [
            "swift-collections", "OrderedCollections", "DequeModule", "HeapModule", "BitCollections",
        ]
        let pipeline = named.filter { targets.contains($0) || !allowed.contains($0) }
        #expect(pipeline.isEmpty, "CacheWardenLedger depends on \(pipeline)")

        let (found, files) = try Self.imports(
            of: "CacheWardenLedger",
            outside: ["Glibc", "OrderedCollections", "DequeModule", "HeapModule", "BitCollections"])
        #expect(files > 5, "the ledger's sources were not found")
        #expect(found.isEmpty, "\(found)")
    }

    /// The filesystem layer's target is the bottom one: of the package's targets it depends on the C shim alone
    /// (no ledger, no pipeline), besides swift-system; and its sources import nothing else but the system's
    /// modules. What it must not name above it, the build refuses; this keeps anyone from adding the edge.
    @Test func theFilesystemTargetDependsOnNoTargetButTheCShim() throws {
        let (targets, named) = try Self.manifest(target: "CacheWardenFilesystem")
        #expect(targets.contains("CacheWardenLedger") && targets.contains("CWardenShims"), "\(targets)")
        let allowed: Set<String> = ["CWardenShims", "SystemPackage", "swift-system"]
        let above = named.filter { !allowed.contains($0) }
        #expect(above.isEmpty, "CacheWardenFilesystem depends on \(above)")

        let (found, files) = try Self.imports(
            of: "CacheWardenFilesystem",
            outside: ["Glibc", "SystemPackage", "Synchronization", "Dispatch", "CWardenShims"])
        #expect(files > 5, "the filesystem layer's sources were not found")
        #expect(found.isEmpty, "\(found)")
    }
}
