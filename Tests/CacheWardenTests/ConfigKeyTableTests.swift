import Foundation
@testable import CacheWardenCommandLine
import Testing
@testable import CacheWarden

/// The key table (`ConfigKey.all`) is the one source of the parser's keys, `check`'s output, the manual page,
/// docs/configuration.md's key reference and the README's key table: these tests fail when one disagrees.
@Suite struct ConfigKeyTableTests {
    let tree = TemporaryTree()

    /// A minimal valid value per key; a key added to the table needs one here.
    static let samples: [String: String] = [
        "size_basis": "apparent", "expire_interval": "5m", "low_disk_free": "10%", "low_disk_target": "20%",
        "low_disk_action": "trim",
        "low_disk_interval": "30s", "control_socket": "cw.sock", "control_socket_mode": "0660",
        "metrics_file": "m.prom", "metrics_interval": "15s", "backend": "poll", "poll_interval": "1m",
        "events_to": "both",
        "dir.<name>.backend": "inotify", "dir.<name>.poll_interval": "10s",
        "dir.<name>.path": ".", "dir.<name>.create": "true", "dir.<name>.quota": "1GB", "dir.<name>.trim_to": "40%",
        "dir.<name>.trim_at": "90%", "dir.<name>.trim_after_idle": "30s", "dir.<name>.hard_quota": "300%",
        "dir.<name>.max_files": "1000", "dir.<name>.max_age": "1w", "dir.<name>.min_age": "10m",
        "dir.<name>.order": "atime", "dir.<name>.protect": "*.db", "dir.<name>.exclude": "tmp/**",
        "dir.<name>.spare_open": "false", "dir.<name>.evict_unit": "entry", "dir.<name>.evict_pointers": "wheels-v*",
        "dir.<name>.profile": "ccache",
        "dir.<name>.group": "g", "dir.<name>.weight": "2", "dir.<name>.delete_rate": "100/s",
        "dir.<name>.count_directories": "true", "dir.<name>.one_file_system": "false", "dir.<name>.prune_dirs": "true",
        "dir.<name>.low_disk_free": "5GB", "dir.<name>.low_disk_target": "10GB", "dir.<name>.allow_any_path": "true",
        "group.<g>.quota": "10GB", "group.<g>.trim_to": "30%",
        "client_lock_wait": "2h", "dir.<name>.client_lock": ".lock, ../.package-cache ofd",
    ]

    static var repoRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// A config setting `key` to its sample, with what the rules between keys need around it.
    func config(for key: ConfigKey, value: String) -> String {
        tree.mkdir("x") // not `.`: a root may not hold the socket or metrics file a sample names
        var lines = ["dir.x.path = x"]
        if key.field == "low_disk_target" { lines.append("low_disk_free = 5%") } // a target needs a threshold
        switch key.scope {
        case .global: lines.append("\(key.field) = \(value)")
        case .directory:
            if key.field == "path" { break }
            if key.field == "trim_after_idle" { lines.append("dir.x.quota = 1GB") }
            if key.field == "group" { lines.append("group.g.quota = 1GB") }
            lines.append("dir.x.\(key.field) = \(value)")
        case .group:
            lines += ["dir.x.group = g", "group.g.\(key.field) = \(value)"]
            if key.field != "quota" { lines.append("group.g.quota = 10GB") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func everyKeyInTheTableIsAcceptedByTheParser() throws {
        #expect(Set(ConfigKey.all.map(\.name)).count == ConfigKey.all.count, "a key is listed twice")
        #expect(Set(Self.samples.keys) == Set(ConfigKey.all.map(\.name)), "every key needs a sample value")
        for key in ConfigKey.all {
            let text = config(for: key, value: Self.samples[key.name] ?? "")
            do { _ = try WardenSettings.parse(text, source: "t.conf", relativeTo: tree.path) } catch {
                Issue.record("\(key.name) rejected: \(error.description)\n\(text)")
            }
        }
    }

    @Test func aKeyNotInTheTableIsRejected() {
        for key in ["bogus", "dir.x.bogus", "group.g.bogus", "dir.x.size_basis", "quota"] {
            let text = "dir.x.path = .\n\(key) = 1\n"
            do {
                _ = try WardenSettings.parse(text, source: "t.conf", relativeTo: tree.path)
                Issue.record("\(key) accepted")
            } catch { #expect(error.description.contains("unknown key \(key)")) }
        }
    }

    @Test func theDocsKeyReferenceIsTheGeneratedMarkdown() throws {
        let doc = try String(contentsOf: Self.repoRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let begin = try #require(doc.range(of: "<!-- keys:begin -->\n"))
        let end = try #require(doc.range(of: "\n<!-- keys:end -->"))
        #expect(
            String(doc[begin.upperBound..<end.lowerBound]) == ConfigKeyDocs.markdown(),
            "regenerate with `cachewarden keys --format markdown`")
    }

    @Test func theManualPageMentionsEveryKey() {
        let man = ConfigKeyDocs.man(version: "test")
        #expect(man.hasPrefix(".TH CACHEWARDEN.CONF 5"))
        for key in ConfigKey.all {
            #expect(man.contains("\\fB\(ConfigKeyDocs.escape(key.name))\\fR"), "\(key.name) missing")
        }
    }

    @Test func everyKeyTheReadmeNamesIsInTheTable() throws {
        let readme = try String(contentsOf: Self.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex { $0.hasPrefix("| key | default | meaning |") })
        let rows = lines[(header + 2)...].prefix { $0.hasPrefix("|") }
        #expect(rows.count >= 10)
        let names = Set(ConfigKey.all.map(\.name))
        for row in rows {
            let cell = row.split(separator: "|").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            #expect(names.contains(cell.replacingOccurrences(of: "`", with: "")), "README names \(cell)")
        }
    }

    @Test func checkPrintsOnlyTheTablesKeys() throws {
        tree.mkdir("x")
        try
            "dir.x.path = x\ndir.x.quota = 1GB\ndir.x.group = g\ngroup.g.quota = 2GB\nlow_disk_free = 5%\nexpire_interval = 1m\n"
            .write(toFile: tree.url("k.conf"), atomically: true, encoding: .utf8)
        let r = try runProcess(cachewardenBinary(), ["check", "--config", tree.url("k.conf")])
        #expect(r.status == 0)
        for line in r.out.split(separator: "\n") where !line.hasPrefix("#") {
            let key = String(line.prefix { $0 != " " })
            let parts = key.split(separator: ".").map(String.init)
            let known =
                switch parts.first {
                case "dir" where parts.count == 3: ConfigKey.isKnown(parts[2], in: .directory)
                case "group" where parts.count == 3: ConfigKey.isKnown(parts[2], in: .group)
                default: ConfigKey.isKnown(key, in: .global)
                }
            #expect(known, "check prints \(key), which is not in the table")
        }
    }
}
