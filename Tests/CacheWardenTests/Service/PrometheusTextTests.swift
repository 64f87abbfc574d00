import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// The exposition text written by hand: the lines swift-prometheus wrote for the same calls (which the file used
/// before), in a fixed order, with escaping and histograms.
@Suite struct PrometheusTextTests {
    @Test func theLinesOfEachKindAsSwiftPrometheusWroteThem() {
        var t = PrometheusText()
        t.increment("x_total", help: "Counted.", labels: [("dir", "a"), ("reason", "quota")], by: 3)
        t.increment("x_total", help: "Counted.", labels: [("dir", "a"), ("reason", "quota")])
        t.increment("o_total", help: "Zero.", labels: [], by: 0)
        t.set("g_bytes", help: "A back\\slash\nand a newline.", labels: [("dir", "q\"uote")], 98304)
        t.observe("d_seconds", help: "Durations.", labels: [("dir", "a")], buckets: [0.001, 1], 0.5)
        t.observe("d_seconds", help: "Durations.", labels: [("dir", "a")], buckets: [0.001, 1], 2)
        #expect(
            String(decoding: t.render(), as: UTF8.self) == """
                # HELP d_seconds Durations.
                # TYPE d_seconds histogram
                d_seconds_bucket{dir="a",le="0.001"} 0
                d_seconds_bucket{dir="a",le="1.0"} 1
                d_seconds_bucket{dir="a",le="+Inf"} 2
                d_seconds_sum{dir="a"} 2.5
                d_seconds_count{dir="a"} 2
                # HELP g_bytes A back\\\\slash\\nand a newline.
                # TYPE g_bytes gauge
                g_bytes{dir="q\\"uote"} 98304.0
                # HELP o_total Zero.
                # TYPE o_total counter
                o_total 0
                # HELP x_total Counted.
                # TYPE x_total counter
                x_total{dir="a",reason="quota"} 4

                """)
        t.remove("g_bytes", labels: [("dir", "q\"uote")])
        #expect(!String(decoding: t.render(), as: UTF8.self).contains("g_bytes"), "an empty family goes")
    }
}
