import Foundation
import Testing

/// Descriptors own themselves (docs/design.md): a descriptor that is passed is swift-system's `FileDescriptor`
/// (borrowed, never closed by who receives it), one that is kept is an `OwnedDescriptor` (closed when its last
/// holder lets go). A raw `Int32` descriptor appears only in the one wrapper over Glibc (`Syscall.swift`,
/// `OwnedDescriptor.swift`), nothing else makes a `FileDescriptor` from a number or opens one, and nothing else
/// calls `close`. Read from the sources, so that it stays true.
///
/// The benchmark (`cachewarden-bench/`) is exempt from the rules on making and closing: its stand-ins for clients
/// (writers, lock takers) and for `du` (`FreshScan`) open, wrap and close raw numbers in their loops as those
/// programs do, because what it measures is the daemon against those very syscalls; what it keeps is owned.
@Suite struct DescriptorTypingTests {
    /// The folders of Sources/ checked: every module that opens descriptors, and the ledger, which must hold none.
    static let modules = [
        "CacheWardenFilesystem", "CacheWarden", "CacheWardenLedger", "CacheWardenService", "CacheWardenDiscovery",
        "CacheWardenCommandLine", "cachewarden", "cachewarden-bench",
    ]
    /// The wrapper files, where raw descriptors are made, passed to Glibc and closed.
    static let wrappers: Set = ["CacheWardenFilesystem/Syscall.swift", "CacheWardenFilesystem/OwnedDescriptor.swift"]
    /// Exempt from the rules on making and closing descriptors (see above).
    static let bench = "cachewarden-bench/"
    /// The benchmark's stand-in for `du`, exempt from the rule on raw numbers too: its walk takes a raw number over
    /// and hands it to `fdopendir`, whose `DIR` closes it (neither a borrowed `FileDescriptor` nor an owner fits).
    static let duStandIn = "cachewarden-bench/FreshScan.swift"
    /// The folders (and the one file of the pipeline that keeps descriptors) whose stored descriptors must all be
    /// owners: no number kept in a tuple or a collection.
    static let ownedOnly = [
        "CacheWardenFilesystem/", "CacheWarden/Eviction/", "CacheWarden/ClientLocks/",
        "CacheWarden/Pipeline/VerifiedDirectories.swift",
    ]

    static let sourcesRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources").path

    /// (path under Sources/, code lines) of every Swift file of `modules` outside the wrappers.
    static func files() -> [(String, [Substring])] {
        modules.flatMap { module in
            let root = sourcesRoot + "/" + module
            let names = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).filter {
                $0.hasSuffix(".swift")
            }
            return names.sorted().compactMap { name -> (String, [Substring])? in
                let path = module + "/" + name
                guard !wrappers.contains(path),
                    let text = try? String(contentsOfFile: root + "/" + name, encoding: .utf8)
                else { return nil }
                return (path, LayeringTests.code(text).split(separator: "\n", omittingEmptySubsequences: false))
            }
        }
    }

    /// Each code line, and each declaration of a function, initializer or subscript whole: its signature's lines
    /// joined up to its `{` (a wrapped signature puts its `-> Int32` or a `fd:\n Int32` on a line of its own).
    /// As (path, line number, text).
    static func statements() -> [(String, Int, String)] {
        let declaration = /(^|[^A-Za-z0-9_.])(func|init|subscript)\b/
        return files().flatMap { path, lines in
            lines.indices.map { i -> (String, Int, String) in
                let line = String(lines[i])
                guard line.contains(declaration), !line.contains("{") else { return (path, i + 1, line) }
                var joined = line
                var j = i + 1
                // Up to the body's `{` (or a requirement's end: an empty line); a signature is never this long.
                while j < lines.count, j < i + 12, !lines[j].trimmingCharacters(in: .whitespaces).isEmpty {
                    joined += " " + lines[j].trimmingCharacters(in: .whitespaces)
                    if lines[j].contains("{") { break }
                    j += 1
                }
                return (path, i + 1, joined)
            }
        }
    }

    /// Statements matching `pattern` (in files `included` accepts), as `path:line: text`.
    static func matches(_ pattern: String, in included: (String) -> Bool = { _ in true }) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return statements().compactMap { path, line, text -> String? in
            let range = NSRange(text.startIndex..., in: text)
            guard included(path), regex.firstMatch(in: text, range: range) != nil else { return nil }
            return "\(path):\(line): \(text.trimmingCharacters(in: .whitespaces))"
        }
    }

    static func outsideTheBench(_ path: String) -> Bool { !path.hasPrefix(bench) }

    @Test func theSourcesAreFound() {
        #expect(Self.files().count > 100, "the sources were not found at \(Self.sourcesRoot)")
        // Every folder named is there: a module or folder that moves must be renamed here, not silently skipped.
        for folder in Self.modules + Self.wrappers + Self.ownedOnly {
            #expect(FileManager.default.fileExists(atPath: Self.sourcesRoot + "/" + folder), "no Sources/\(folder)")
        }
        #expect(Self.statements().contains { $0.2.contains("func open(") && $0.2.contains("{") })
    }

    /// A parameter, property, tuple element or closure parameter named as a descriptor and typed `Int32`/`CInt`.
    @Test func noDescriptorIsABareInteger() throws {
        let names =
            "[A-Za-z]*(fd|FD|Fd|[Dd]escriptor|dirfd|[Pp]arent|fileno|[Ss]ocket|[Ll]istener|memfd|[Ff]older|"
            + "[Dd]irectory|[Tt]rash|[Ll]isting|inotify|epoll)[A-Za-z]*"
        let found = try Self.matches("\\b\(names)\\??\\s*:\\s*(Int32|CInt)\\b", in: { $0 != Self.duStandIn })
        #expect(found.isEmpty, "bare descriptors:\n\(found.joined(separator: "\n"))")
    }

    /// A function that opens something and hands back a raw number, alone or in a tuple (named or not), or any
    /// function that returns a descriptor with a raw number beside it.
    @Test func noOpenReturnsABareInteger() throws {
        let integer = "\\b(Int32|CInt)\\b"
        let opens = try Self.matches(
            "\\bfunc (open|make|accept|reopen|dup)[A-Za-z]*(<[^>]*>)?\\(.*\\)[^{]*->[^{]*\(integer)")
        let beside = try Self.matches(
            "\\bfunc [^{]*->\\s*[^{]*(\(integer)[^{]*(FileDescriptor|OwnedDescriptor)|(FileDescriptor|OwnedDescriptor)[^{]*\(integer))"
        )
        let found = Array(Set(opens + beside)).sorted()
        #expect(found.isEmpty, "raw opens:\n\(found.joined(separator: "\n"))")
    }

    /// A number kept in a tuple or a collection of a stored property (or a variable) of the filesystem, eviction
    /// and client-lock code, where every descriptor kept is an owner: `[NodeID: Int32]`, `(node: NodeID, Int32)`.
    /// Process ids (`pid`, `pids`) are numbers, not descriptors.
    @Test func noDescriptorHidesInACollection() throws {
        let found = try Self.matches(
            "\\b(let|var)\\s+(?![A-Za-z]*[Pp]ids?\\b)\\w+\\s*(:[^=]*[\\[(][^=]*\\b(Int32|CInt)\\b"
                + "|=\\s*[\\[(][^\\])=]*\\b(Int32|CInt)\\b[^=]*[\\])]\\s*\\()",
            in: { path in Self.ownedOnly.contains { path.hasPrefix($0) } })
        #expect(found.isEmpty, "numbers kept where owners belong:\n\(found.joined(separator: "\n"))")
    }

    /// Closing is the owner's job: no `close(x)` outside the wrapper, and no swift-system `close()` or
    /// `closeAfter` on a `FileDescriptor`. (Those throw, so a call to them is always `try`'s; the closes of
    /// CacheWarden's own types — a cache's, a connection's — do not, and are not descriptors'.)
    @Test func onlyTheOwnerCloses() throws {
        let found = try Self.matches(
            "(^|[^.A-Za-z_])(Glibc\\.|Syscall\\.)?close\\(\\s*[^)\\s]|\\btry[?!]?\\s+[^;{}]*\\.close\\(\\s*\\)"
                + "|\\.closeAfter\\b",
            in: Self.outsideTheBench)
        #expect(found.isEmpty, "closed outside the owner:\n\(found.joined(separator: "\n"))")
    }

    /// A descriptor comes from an owner: no `FileDescriptor(rawValue:)` made of a number and no
    /// `FileDescriptor.open` (whose result nothing would close) outside the wrapper.
    @Test func noDescriptorIsMadeFromANumber() throws {
        let found = try Self.matches(
            "\\bFileDescriptor\\s*\\(\\s*rawValue\\s*:|\\bFileDescriptor\\s*\\.\\s*(open|pipe)\\b",
            in: Self.outsideTheBench)
        #expect(found.isEmpty, "descriptors made outside an owner:\n\(found.joined(separator: "\n"))")
    }
}
