import Foundation
import Testing

/// The pipeline's shape, read from the sources: the rules docs/design.md states that the compiler cannot keep.
/// The ledger is a target of its own (`CacheWardenLedger`), so it cannot name the pipeline and nothing outside it
/// can write its storage: the build keeps that. What stays here is what lives inside one module (backends,
/// policies and eviction are folders of `CacheWarden`) and what the ledger's target may depend on.
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

    /// The ledger's target depends on nothing of the package: no pipeline target and no C shim (it makes no
    /// system calls), read from Package.swift itself; and its sources import only the C library.
    @Test func theLedgerTargetDependsOnNoPipelineTarget() throws {
        let manifest = try String(contentsOfFile: Self.checkout + "/Package.swift", encoding: .utf8)
        let start = try #require(manifest.range(of: "name: \"CacheWardenLedger\""), "no CacheWardenLedger target")
        // The target's own arguments: up to the parenthesis that closes its `.target(`.
        var depth = 1
        var end = start.upperBound
        while end < manifest.endIndex, depth > 0 {
            if manifest[end] == "(" { depth += 1 } else if manifest[end] == ")" { depth -= 1 }
            end = manifest.index(after: end)
        }
        let arguments = String(manifest[start.upperBound..<end])
        let quoted = try Regex("\"([^\"]*)\"")
        let named = arguments.matches(of: quoted).compactMap { $0.output[1].substring.map(String.init) }
        let targets = manifest.matches(of: try Regex("name: \"([^\"]+)\"")).compactMap {
            $0.output[1].substring.map(String.init)
        }
        #expect(targets.contains("CacheWarden") && targets.contains("CInotify"), "\(targets)")
        // Only swift-collections may join it (a product of another package, not a target of this one).
        let allowed: Set<String> = ["swift-collections", "OrderedCollections", "DequeModule", "HeapModule"]
        let pipeline = named.filter { targets.contains($0) || !allowed.contains($0) }
        #expect(pipeline.isEmpty, "CacheWardenLedger depends on \(pipeline)")

        let ledger = Self.sources(in: "Sources/CacheWardenLedger", of: Self.checkout)
        #expect(ledger.count > 5, "the ledger's sources were not found")
        let imports = try Regex("(?m)^\\s*(?:@\\w+ )*(?:\\w+ )?import (\\w+)")
        let allowedImports: Set<String> = ["Glibc", "OrderedCollections", "DequeModule", "HeapModule"]
        var found: [String] = []
        for (path, text) in ledger {
            for match in Self.code(text).matches(of: imports) {
                if let module = match.output[1].substring, !allowedImports.contains(String(module)) {
                    found.append("\(path): \(module)")
                }
            }
        }
        #expect(found.isEmpty, "\(found)")
    }
}
