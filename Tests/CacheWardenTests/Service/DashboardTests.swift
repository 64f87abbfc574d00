import Foundation
import Glibc
import Testing

/// The shipped Grafana dashboard (monitoring/dashboards/cachewarden.json) and the rules: every query is PromQL that
/// Prometheus parses, is scoped by the `job` variable on a chosen data source, and every metric name the dashboard
/// and the rules read exists — in the `.prom` file of a real `cachewarden run`, in a real node_exporter's scrape, or
/// as a recording rule — so the dashboard cannot rot when a metric is renamed.
@Suite struct DashboardTests {
    private static func panels(_ dashboard: [String: Any]) -> [[String: Any]] {
        let top = dashboard["panels"] as? [[String: Any]] ?? []
        return (top + top.flatMap { $0["panels"] as? [[String: Any]] ?? [] }).filter { $0["type"] as? String != "row" }
    }

    /// The sample names of an exposition text.
    private static func sampleNames(_ text: String) -> Set<String> {
        Set(
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
                String($0.prefix { $0 != "{" && $0 != " " })
            })
    }

    @Test func theNameExtractorKeepsNamesOnly() {
        let expr =
            #"sum by (job, reason) (rate(a_total{dir=~"x|y",q="{b}"}[5m] offset 1h)) / on (job) group_left (backend) "#
            + #"b:c:d > bool 4 * 3600 and ignoring (le) histogram_quantile(0.9, c_bucket) unless e1 == 1e9"#
        #expect(PromQL.metricNames(expr) == ["a_total", "b:c:d", "c_bucket", "e1"])
        #expect(PromQL.metricNames(Monitoring.plainPromQL(#"label_values(m{job=~"$job"}, instance)"#)) == ["m"])
        #expect(PromQL.metricNames(Monitoring.plainPromQL("rate(m[$__rate_interval])")) == ["m"])
    }

    @Test func theDashboardHasDataSourceJobAndInstanceVariables() throws {
        let dashboard = try Monitoring.dashboardJSON()
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        let byName = Dictionary(variables.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(
            byName["datasource"]?["type"] as? String == "datasource"
                && byName["datasource"]?["query"] as? String == "prometheus")
        for name in ["job", "instance"] { #expect(byName[name]?["type"] as? String == "query", "no $\(name) variable") }
        let panels = Self.panels(dashboard)
        #expect(panels.count >= 10)
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            let sources = [panel["datasource"]] + (panel["targets"] as? [[String: Any]] ?? []).map { $0["datasource"] }
            #expect(sources.allSatisfy { ($0 as? [String: Any])?["uid"] as? String == "${datasource}" }, "\(title)")
            #expect(!(panel["targets"] as? [Any] ?? []).isEmpty, "\(title) has no query")
        }
        // Every selector of every panel query is scoped to the chosen jobs; the per-host panels to the instances.
        let queries = Monitoring.dashboardQueries(dashboard).filter { !$0.hasPrefix("label_values(") }
        var perHost = 0
        for q in queries {
            let selectors = q.matches(of: /\{[^}]*\}/).map { String($0.output) }
            #expect(!selectors.isEmpty && selectors.allSatisfy { $0.contains(#"job=~"$job""#) }, "\(q)")
            if selectors.allSatisfy({ $0.contains(#"instance=~"$instance""#) }) { perHost += 1 }
        }
        #expect(
            perHost > 0 && perHost < queries.count,
            "\(perHost) of \(queries.count) per host: no per-host or no fleet view")
    }

    @Test(.enabled(if: which("promtool") != nil, "needs promtool (apt-get install prometheus)"))
    func everyDashboardQueryParsesInPrometheus() throws {
        let queries = Monitoring.dashboardQueries(try Monitoring.dashboardJSON()).map(Monitoring.plainPromQL)
        // JSON is YAML (with `/` left alone, as YAML knows no `\/`): the queries as recording rules, for promtool's
        // parser.
        let rules = queries.enumerated().map { ["record": "dashboard:query_\($0.offset):check", "expr": $0.element] }
        let tree = TemporaryTree()
        let file = tree.url("dashboard-rules.yaml")
        try JSONSerialization.data(
            withJSONObject: ["groups": [["name": "dashboard", "rules": rules]]], options: .withoutEscapingSlashes
        )
        .write(to: URL(fileURLWithPath: file))
        let r = try runProcess(try #require(which("promtool")), ["check", "rules", file])
        #expect(r.status == 0 && r.out.contains("SUCCESS: \(queries.count) rules found"), "\(r.out)\(r.err)")
    }

    @Test(
        .enabled(
            if: which("prometheus-node-exporter") != nil,
            "needs prometheus-node-exporter (apt-get install prometheus-node-exporter)"),
        .enabled(if: Monitoring.canReadYAML, "needs python3 with PyYAML to read the rules (pip install pyyaml)"))
    func everyMetricTheDashboardAndRulesReadExistsInARealRun() throws {
        let records = try Monitoring.rules(Monitoring.records)
        let exprs =
            try (Monitoring.rules(Monitoring.alerts) + records).compactMap { $0["expr"] as? String }
            + Monitoring.dashboardQueries(try Monitoring.dashboardJSON())
        let names = exprs.reduce(into: Set<String>()) { $0.formUnion(PromQL.metricNames(Monitoring.plainPromQL($1))) }
        let recorded = Set(records.compactMap { $0["record"] as? String })
        let ours = names.filter { $0.hasPrefix("cachewarden_") }, nodes = names.filter { $0.hasPrefix("node_") }
        #expect(ours.count >= 15 && !nodes.isEmpty, "\(names.sorted())")
        #expect(
            names.subtracting(ours).subtracting(nodes) == recorded.intersection(names),
            "names from nowhere: \(names.sorted())")
        #expect(recorded.isSubset(of: names), "recording rules nothing reads: \(recorded.subtracting(names).sorted())")

        // A real daemon with a quota its files exceed, so trims, evictions and their histogram are in the file.
        let tree = TemporaryTree()
        tree.mkdir("cache")
        tree.mkdir("textfile")
        // With a client lock, so that its gauges (what CacheWardenClientLockHeld reads) are in the file too.
        try
            "control_socket = cw.sock\nmetrics_file = textfile/cachewarden.prom\nmetrics_interval = 1s\ndir.cache.path = cache\ndir.cache.quota = 200KB\ndir.cache.client_lock = .lock\n"
            .write(toFile: tree.url("cw.conf"), atomically: true, encoding: .utf8)
        let daemon = try RunningCLI(["run", "-c", tree.url("cw.conf")])
        #expect(waitUntilWatching(daemon.process.processIdentifier), "\(daemon.stderr)")
        for i in 0..<30 { tree.write("cache/f\(i)", size: 20_000) }
        var written = Set<String>()
        #expect(
            eventually(timeout: 20) {
                written = Self.sampleNames(
                    (try? String(contentsOfFile: tree.url("textfile/cachewarden.prom"), encoding: .utf8)) ?? "")
                return ours.isSubset(of: written)
            }, "not in the daemon's .prom: \(ours.subtracting(written).sorted())\n\(daemon.stderr)")

        // node_exporter's own names, and ours through its textfile collector, from a real scrape.
        let port = freePort()
        let exporter = try RunningCLI(
            [
                "--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults", "--collector.textfile",
                "--collector.filesystem", "--collector.textfile.directory=\(tree.url("textfile"))",
            ],
            executable: try #require(which("prometheus-node-exporter")))
        defer { kill(exporter.process.processIdentifier, SIGKILL) }
        var scraped = Set<String>()
        #expect(
            eventually(timeout: 20) {
                scraped = Self.sampleNames(httpGet("http://127.0.0.1:\(port)/metrics") ?? "")
                return nodes.union(ours).isSubset(of: scraped)
            },
            "not in node_exporter's scrape: \(nodes.union(ours).subtracting(scraped).sorted())\n\(exporter.stderr.suffix(500))"
        )
        #expect(daemon.interrupt() == 0)
    }
}
