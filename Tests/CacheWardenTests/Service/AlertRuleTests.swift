import Foundation
import Testing

/// The shipped Prometheus rules (monitoring/): they load in Prometheus's own `promtool`, pass their unit tests
/// (input series → expected alerts, and the cases that must stay quiet), every alert is tested both ways and has
/// its annotations and a runbook section, and the tests fail when an alert's expression is broken.
@Suite(
    .enabled(if: which("promtool") != nil, "needs promtool (apt-get install prometheus)"),
    .enabled(
        if: Monitoring.canReadYAML, "needs python3 with PyYAML (pip install pyyaml, or apt-get install python3-yaml)"))
struct AlertRuleTests {
    private static func promtool(_ args: [String]) throws -> (status: Int32, said: String) {
        let r = try runProcess(try #require(which("promtool")), args)
        return (r.status, r.out + r.err)
    }

    @Test func promtoolLoadsEveryRule() throws {
        let check = try Self.promtool(["check", "rules", Monitoring.alerts, Monitoring.records])
        #expect(check.status == 0, "\(check.said)")
        // promtool's count of each file is what the YAML holds, and it has no lint to report.
        for file in [Monitoring.alerts, Monitoring.records] {
            let count = try Monitoring.rules(file).count
            #expect(
                count > 0 && check.said.contains("Checking \(file)\n  SUCCESS: \(count) rules found"), "\(check.said)")
        }
        #expect(!check.said.lowercased().contains("warning"), "\(check.said)")
    }

    @Test func theRuleUnitTestsPass() throws {
        let files = try Monitoring.ruleTests()
        let run = try Self.promtool(["test", "rules"] + files)
        #expect(run.status == 0, "\(run.said)")
        #expect(files.count >= 2 && run.said.components(separatedBy: "SUCCESS").count - 1 == files.count, "\(run.said)")
    }

    @Test func everyAlertHasItsAnnotationsAndARunbookSection() throws {
        let runbook = try String(contentsOfFile: Monitoring.path("docs/runbook.md"), encoding: .utf8)
        // GitHub's anchors: a heading (outside fenced code) lowercased, punctuation dropped, spaces as dashes.
        var fenced = false
        let headings = runbook.split(separator: "\n").filter { line in
            if line.hasPrefix("```") { fenced.toggle() }
            return !fenced && line.hasPrefix("#")
        }
        let anchors = Set(
            headings.map { heading in
                String(
                    heading.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
                        .filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }.map {
                            $0 == " " ? "-" : $0
                        })
            })
        let alerts = try Monitoring.rules(Monitoring.alerts)
        #expect(alerts.count >= 6)
        for rule in alerts {
            let name = try #require(rule["alert"] as? String)
            let annotations = rule["annotations"] as? [String: String] ?? [:]
            for key in ["summary", "description", "runbook_url"] {
                #expect(!(annotations[key] ?? "").isEmpty, "\(name): \(key)")
            }
            let url = annotations["runbook_url"] ?? ""
            let parts = url.split(separator: "#", maxSplits: 1).map(String.init)
            #expect(
                parts.count == 2 && parts[0].hasSuffix("/docs/runbook.md") && anchors.contains(parts[1]),
                "\(name): \(url)")
            #expect((rule["labels"] as? [String: String])?["severity"] != nil, "\(name) has no severity")
        }
    }

    @Test func everyAlertIsTestedFiringAndQuietAndEveryRecordIsTested() throws {
        var firing = Set<String>(), quiet = Set<String>(), exprs: [String] = []
        for file in try Monitoring.ruleTests() {
            let groups = (try Monitoring.yaml(file) as? [String: Any])?["tests"] as? [[String: Any]] ?? []
            for group in groups {
                for t in group["alert_rule_test"] as? [[String: Any]] ?? [] {
                    guard let name = t["alertname"] as? String else { continue }
                    if (t["exp_alerts"] as? [Any] ?? []).isEmpty { quiet.insert(name) } else { firing.insert(name) }
                }
                exprs += (group["promql_expr_test"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }
            }
        }
        for name in try Monitoring.rules(Monitoring.alerts).compactMap({ $0["alert"] as? String }) {
            #expect(firing.contains(name), "no test where \(name) fires")
            #expect(quiet.contains(name), "no test where \(name) stays quiet")
        }
        let tested = exprs.reduce(into: Set<String>()) { $0.formUnion(PromQL.metricNames($1)) }
        for record in try Monitoring.rules(Monitoring.records).compactMap({ $0["record"] as? String }) {
            #expect(tested.contains(record), "no promql_expr_test reads \(record)")
        }
    }

    /// Each alert in turn made unable to fire (its expression replaced by one that is never true): the unit tests
    /// must then fail, so they do assert that alert.
    @Test func theTestsFailWhenAnAlertCannotFire() throws {
        let alerts = try Monitoring.rules(Monitoring.alerts).compactMap { $0["alert"] as? String }
        let tree = TemporaryTree()
        tree.mkdir("tests")
        for file in try Monitoring.ruleTests() {
            try FileManager.default.copyItem(
                atPath: file, toPath: tree.url("tests/" + URL(fileURLWithPath: file).lastPathComponent))
        }
        let script = """
            import sys, yaml
            doc = yaml.safe_load(open(sys.argv[1]))
            for g in doc["groups"]:
                for r in g["rules"]:
                    if r.get("alert") == sys.argv[2]: r["expr"] = "vector(1) < 0"
            yaml.safe_dump(doc, open(sys.argv[3], "w"))
            """
        for alert in alerts {
            let mutate = try runProcess(
                which("python3") ?? "/usr/bin/python3",
                ["-c", script, Monitoring.alerts, alert, tree.url("prometheus_alerts.yaml")])
            #expect(mutate.status == 0, "\(mutate.err)")
            let tests = try FileManager.default.contentsOfDirectory(atPath: tree.url("tests")).sorted().map {
                tree.url("tests/" + $0)
            }
            let run = try Self.promtool(["test", "rules"] + tests)
            #expect(run.status != 0 && run.said.contains(alert), "the tests pass with \(alert) unable to fire")
        }
    }
}
