import Foundation
import Testing

/// monitoring/vector.toml, the journal-to-Loki example. Neither `vector` nor `fluent-bit` is in Debian's archive,
/// so `vector validate` cannot run here; this checks what can be checked without it: the file is valid TOML
/// (Python's `tomllib`), reads the unit's native records, keeps every CACHEWARDEN_ field, and labels Loki streams
/// only by low-cardinality fields. Where `vector` is installed it validates the file too.
@Suite(
    .enabled(
        if: (try? runProcess(which("python3") ?? "/usr/bin/python3", ["-c", "import tomllib"]))?.status == 0,
        "needs python3 with tomllib (3.11 or later)"))
struct VectorConfigTests {
    static let file = ConfigKeyTableTests.repoRoot.appendingPathComponent("monitoring/vector.toml").path

    @Test func theExampleShipsTheJournalFieldsToLoki() throws {
        let script = """
            import json, sys, tomllib
            c = tomllib.load(open(sys.argv[1], "rb"))
            print(json.dumps(c))
            """
        let r = try runProcess(try #require(which("python3")), ["-c", script, Self.file])
        #expect(r.status == 0, "\(r.err)")
        let config = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let source = try #require((config["sources"] as? [String: Any])?["cachewarden_journal"] as? [String: Any])
        #expect(source["type"] as? String == "journald")
        #expect(source["include_units"] as? [String] == ["cachewarden.service"])
        let remap = try #require((config["transforms"] as? [String: Any])?["cachewarden_events"] as? [String: Any])
        let vrl = try #require(remap["source"] as? String)
        #expect(vrl.contains("starts_with(key, \"CACHEWARDEN_\")") && vrl.contains("slice!(key, 12)"))
        let loki = try #require((config["sinks"] as? [String: Any])?["loki"] as? [String: Any])
        #expect(loki["type"] as? String == "loki" && loki["inputs"] as? [String] == ["cachewarden_events"])
        let labels = try #require(loki["labels"] as? [String: String])
        #expect(Set(labels.keys) == ["job", "host", "event", "dir"], "a label per file would make a stream per file")
    }

    @Test(
        .enabled(
            if: which("vector") != nil, "needs vector (not in Debian's archive; the file is checked with tomllib above)"
        ))
    func vectorValidatesItWhereInstalled() throws {
        let vector = try #require(which("vector"))
        let r = try runProcess(vector, ["validate", "--no-environment", Self.file])
        #expect(r.status == 0, "\(r.out)\(r.err)")
    }
}
