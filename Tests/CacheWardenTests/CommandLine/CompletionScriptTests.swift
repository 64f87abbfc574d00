import CacheWardenCommandLine
import Foundation
import Testing

/// The completion scripts `make install` ships, run by the real shells: bash's function fills `COMPREPLY` as bash
/// would call it, fish answers `complete -C`, and zsh reads the script and registers it with `compinit`.
@Suite struct CompletionScriptTests {
    static func script(_ shell: String) throws -> String {
        let r = try runProcess(cachewardenBinary(), ["--generate-completion-script", shell])
        try #require(r.status == 0, "\(r.err)")
        return r.out
    }

    /// What bash's completion function offers for `words`, the last being completed.
    static func bash(_ words: [String], script: String) throws -> [String] {
        let tree = TemporaryTree("cw-bash")
        try script.write(toFile: tree.url("c.bash"), atomically: true, encoding: .utf8)
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let r = try runProcess(
            "/bin/bash",
            [
                "-c",
                "cd \(tree.path) && source c.bash && COMP_WORDS=(\(quoted)) && COMP_CWORD=\(words.count - 1) && _cachewarden && printf '%s\\n' \"${COMPREPLY[@]}\"",
            ])
        try #require(r.status == 0, "\(r.err)")
        return r.out.split(separator: "\n").map(String.init)
    }

    @Test func bashCompletesCommandsOptionsAndValues() throws {
        let script = try Self.script("bash")
        #expect(try Self.bash(["cachewarden", "st"], script: script) == ["status"])
        #expect(
            try Self.bash(["cachewarden", "run", "--size-basis", ""], script: script).sorted() == [
                "allocated", "apparent",
            ])
        #expect(try Self.bash(["cachewarden", "discover", "--f"], script: script) == ["--force"])
        #expect(
            try Self.bash(["cachewarden", "status", "--s"], script: script).sorted() == [
                "--scan", "--si", "--size-basis",
            ])
        // A hidden command is not offered, and a value with no completion offers nothing.
        #expect(try !Self.bash(["cachewarden", ""], script: script).contains("keys"))
        #expect(try Self.bash(["cachewarden", "run", "--quota", ""], script: script) == [])
    }

    @Test(.enabled(if: which("fish") != nil, "needs fish"))
    func fishCompletesCommandsOptionsAndValues() throws {
        let tree = TemporaryTree("cw-fish")
        try Self.script("fish").write(toFile: tree.url("c.fish"), atomically: true, encoding: .utf8)
        func complete(_ line: String) throws -> [String] {
            let r = try runProcess(
                try #require(which("fish")),
                ["--no-config", "-c", "source \(tree.url("c.fish")); complete -C '\(line)'"])
            try #require(r.status == 0, "\(r.err)")
            return r.out.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
        }
        #expect(try complete("cachewarden ev") == ["events"])
        #expect(try complete("cachewarden run --size-basis ").sorted() == ["allocated", "apparent"])
        #expect(try complete("cachewarden trim --t").sorted() == ["--timeout", "--to"])
        #expect(try complete("cachewarden trim --to") == ["--to"])
        #expect(try complete("cachewarden discover --inc") == ["--include"])
    }

    @Test(.enabled(if: which("zsh") != nil, "needs zsh"))
    func zshReadsTheScriptAndCompinitRegistersIt() throws {
        let tree = TemporaryTree("cw-zsh")
        tree.mkdir("functions")
        try Self.script("zsh").write(toFile: tree.url("functions/_cachewarden"), atomically: true, encoding: .utf8)
        let zsh = try #require(which("zsh"))
        let syntax = try runProcess(zsh, ["-n", tree.url("functions/_cachewarden")])
        #expect(syntax.status == 0, "\(syntax.err)")
        let registered = try runProcess(
            zsh,
            [
                "-f", "-c",
                "fpath=(\(tree.url("functions")) $fpath); autoload -U compinit; compinit -u -d \(tree.url("zcompdump")); print -r -- $_comps[cachewarden]",
            ])
        #expect(registered.out == "_cachewarden\n", "\(registered.out)\(registered.err)")
    }
}
