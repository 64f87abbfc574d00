import Foundation
import Testing

/// The pipeline's shape, read from the sources: the rules docs/design.md states, checked so that they stay true.
@Suite struct LayeringTests {
    /// Sources/CacheWarden, from this file's place in the checkout.
    static let library = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/CacheWarden").path

    /// (relative path, text) of every Swift file under `folder` of the library.
    static func sources(in folder: String) -> [(String, String)] {
        let root = library + "/" + folder
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

    @Test func ledgerPoliciesAndEvictionNameNoBackend() {
        let backendTypes = [
            "InotifyBackend", "InotifyDescriptor", "InotifyOpens", "ChangeBackend", "BackendFactory",
            "WatchPort", "WatchHandle", "DirectoryWatcher",
        ]
        var found: [String] = []
        for folder in ["Ledger", "Policies", "Eviction"] {
            for (path, text) in Self.sources(in: folder) {
                let body = Self.code(text)
                for name in backendTypes where body.contains(name) { found.append("\(path): \(name)") }
            }
        }
        #expect(Self.sources(in: "Ledger").count > 5, "the sources were not found at \(Self.library)")
        #expect(found.isEmpty, "\(found)")
    }

    /// No stage writes the ledger's storage: outside Ledger/ it changes only through its methods. (Swift cannot
    /// say "settable only in the type's own files" across the ledger's extension files, so this test does.)
    /// `names.append(_:to:)` reads a name into a buffer.
    @Test func nothingOutsideTheLedgerWritesItsStorage() throws {
        let storage = [
            "names", "records", "freeRecords", "nodes", "freeNodes", "accounts", "bigSizes", "heaps",
            "heapPositions", "openCounts", "openedAs", "needsStat", "removedNodes", "releasedRecords",
        ]
        let write = try Regex(
            "ledger\\.(" + storage.joined(separator: "|")
                + ")(\\[[^\\]]*\\])?\\s*(=[^=]|\\+=|-=|\\.append(?!\\([^)]*to:)|\\.remove|\\.insert)")
        var found: [String] = []
        for folder in [
            "API", "Backends", "Config", "Control", "Environment", "Eviction", "Filesystem", "Pipeline", "Policies",
            "Service", "Sinks",
        ] {
            for (path, text) in Self.sources(in: folder) where Self.code(text).contains(write) { found.append(path) }
        }
        #expect(found.isEmpty, "\(found)")
    }
}
