import Foundation
import Testing

/// Descriptors own themselves (docs/design.md): a descriptor that is passed is swift-system's `FileDescriptor`
/// (borrowed, never closed by who receives it), one that is kept is an `OwnedDescriptor` (closed when its last
/// holder lets go). A raw `Int32` descriptor appears only in the one wrapper over Glibc (`Syscall.swift`,
/// `OwnedDescriptor.swift`), and nothing else calls `close`. Read from the sources, so that it stays true.
@Suite struct DescriptorTypingTests {
    /// The folders of Sources/ checked: every module that opens descriptors.
    static let modules = [
        "CacheWarden", "CacheWardenService", "CacheWardenDiscovery", "CacheWardenCommandLine", "cachewarden",
        "cachewarden-bench",
    ]
    /// The wrapper files, where raw descriptors are made, passed to Glibc and closed.
    static let wrappers: Set = ["CacheWarden/Filesystem/Syscall.swift", "CacheWarden/Filesystem/OwnedDescriptor.swift"]

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

    /// Lines of `files()` matching `pattern`, as `path:line: text`.
    static func matches(_ pattern: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return files().flatMap { path, lines in
            lines.enumerated().compactMap { i, line -> String? in
                let text = String(line)
                let range = NSRange(text.startIndex..., in: text)
                guard regex.firstMatch(in: text, range: range) != nil else { return nil }
                return "\(path):\(i + 1): \(text.trimmingCharacters(in: .whitespaces))"
            }
        }
    }

    @Test func theSourcesAreFound() {
        #expect(Self.files().count > 100, "the sources were not found at \(Self.sourcesRoot)")
    }

    /// A parameter, property, tuple element or closure parameter named as a descriptor and typed `Int32`/`CInt`.
    @Test func noDescriptorIsABareInteger() throws {
        let names =
            "[A-Za-z]*(fd|FD|Fd|[Dd]escriptor|dirfd|[Pp]arent|fileno|[Ss]ocket|[Ll]istener|memfd|[Ff]older|"
            + "[Dd]irectory|[Tt]rash|[Ll]isting|inotify|epoll)[A-Za-z]*"
        let found = try Self.matches("\\b\(names)\\??\\s*:\\s*(Int32|CInt)\\b")
        #expect(found.isEmpty, "bare descriptors:\n\(found.joined(separator: "\n"))")
    }

    /// A function that opens something and hands back a raw number.
    @Test func noOpenReturnsABareInteger() throws {
        let found = try Self.matches("func (open|make|accept|reopen)[A-Za-z]*\\(.*\\)[^{]*->\\s*(Int32|CInt)\\b")
        #expect(found.isEmpty, "raw opens:\n\(found.joined(separator: "\n"))")
    }

    /// Closing is the owner's job: no `close(x)` outside the wrapper (the benchmark's stand-ins for clients and
    /// for `du` open and close as those programs do, and are not checked).
    @Test func onlyTheOwnerCloses() throws {
        let found = try Self.matches("(^|[^.A-Za-z_])(Glibc\\.|Syscall\\.)?close\\(\\s*[^)\\s]").filter {
            !$0.hasPrefix("cachewarden-bench/")
        }
        #expect(found.isEmpty, "closed outside the owner:\n\(found.joined(separator: "\n"))")
    }
}
