import Foundation

/// The shipped monitoring files (monitoring/, docs/runbook.md) and the readers the tests need for them: YAML through
/// PyYAML (the parser Prometheus's own tooling ecosystem uses from Python), JSON through `JSONSerialization`, and
/// PromQL through `promtool` (validity) plus `PromQL.metricNames` (the names a query reads).
enum Monitoring {
    /// The repository's root, from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    static func path(_ relative: String) -> String { root + "/" + relative }

    static let alerts = path("monitoring/prometheus_alerts.yaml")
    static let records = path("monitoring/prometheus_rules.yaml")
    static let dashboard = path("monitoring/dashboards/cachewarden.json")

    /// The rule unit tests, monitoring/tests/*.yaml, sorted.
    static func ruleTests() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path("monitoring/tests")).filter { $0.hasSuffix(".yaml") }
            .sorted().map { path("monitoring/tests/" + $0) }
    }

    /// Whether Python has PyYAML (the machine's pip set, or Debian's python3-yaml).
    static let canReadYAML: Bool = {
        guard let python = which("python3") else { return false }
        return (try? runProcess(python, ["-c", "import yaml"]).status) == 0
    }()

    /// A YAML file as the objects `JSONSerialization` makes (dictionaries, arrays, strings, numbers).
    static func yaml(_ file: String) throws -> Any {
        let script = "import json, sys, yaml\njson.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)"
        let r = try runProcess(which("python3") ?? "/usr/bin/python3", ["-c", script, file])
        guard r.status == 0 else { throw ParseFailure(message: "\(file): \(r.err)") }
        return try JSONSerialization.jsonObject(with: Data(r.out.utf8))
    }

    /// The rules of a rule file, all groups together.
    static func rules(_ file: String) throws -> [[String: Any]] {
        let groups = (try yaml(file) as? [String: Any])?["groups"] as? [[String: Any]] ?? []
        return groups.flatMap { $0["rules"] as? [[String: Any]] ?? [] }
    }

    /// The dashboard's JSON object.
    static func dashboardJSON() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dashboard))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// Every PromQL query the dashboard runs: panel targets' `expr` (rows' panels too) and the variables' queries.
    static func dashboardQueries(_ dashboard: [String: Any]) -> [String] {
        func targets(_ panels: [[String: Any]]) -> [String] {
            panels.flatMap { p in
                ((p["targets"] as? [[String: Any]]) ?? []).compactMap { $0["expr"] as? String }
                    + targets(p["panels"] as? [[String: Any]] ?? [])
            }
        }
        let variables = ((dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? [])
            .filter { $0["type"] as? String == "query" }.compactMap { $0["definition"] as? String }
        return targets(dashboard["panels"] as? [[String: Any]] ?? []) + variables
    }

    /// A Grafana query made plain PromQL: `label_values(sel, label)` becomes `sel`, `$__rate_interval`-style
    /// intervals become `5m`, other variables `x` (they stand inside matchers' strings).
    static func plainPromQL(_ query: String) -> String {
        var q = query
        if q.hasPrefix("label_values("), q.hasSuffix(")") {
            let inner = q.dropFirst("label_values(".count).dropLast()
            q = inner.lastIndex(of: ",").map { String(inner[..<$0]) } ?? ""
        }
        for interval in ["$__rate_interval", "$__interval", "$__range"] {
            q = q.replacingOccurrences(of: interval, with: "5m")
        }
        return q.replacingOccurrences(of: #"\$\{?\w+\}?"#, with: "x", options: .regularExpression)
    }
}
