import CacheWardenService
import Foundation
import Glibc

/// Index time of a tree whose every file has a second name outside the root.
struct HardLinkResult: Sendable {
    var tree: TreeInfo
    /// Seconds it took to make the second names.
    var linkSeconds: Double
    /// `du -s` of the root, per timed run (after one warm-up run).
    var du: [Double]
    /// One `index-child` report per run.
    var cachewarden: [IndexChildReport]

    var cachewardenMedian: Double { Stats.median(cachewarden.map(\.seconds)) }
    var duMedian: Double { Stats.median(du) }
    var countedFiles: Int { cachewarden.first?.files ?? 0 }
}

/// Hard-linked trees (a dedup store, ccache's `hard_link` mode, pnpm, `cp -al` snapshots) must index in linear
/// time: the index tree's layout again, each file linked into a store beside the root (so every file counted has
/// `st_nlink` 2 and its other name outside), timed from start to `ready` beside `du -s` of the same root.
enum HardLinkBenchmark {
    static func run(files: Int, runs: Int, env: Environment, work: String, log: (String) -> Void) throws
        -> HardLinkResult
    {
        let base = "\(work)/links-\(files)"
        let root = "\(base)/cache", store = "\(base)/store"
        defer { Files.discard(base) }
        let spec = TreeSpec(files: files, sparse: true)
        log("links: building \(files) files, each with a second name outside the root…")
        let tree = try TreeBuilder.build(at: root, spec: spec)
        let (_, linkSeconds) = try Clock.time { try linkEveryFile(spec, from: root, into: store) }
        log("links: linked \(files) files in \(Format.seconds(linkSeconds))")

        var du: [Double] = []
        if let duPath = env.du {
            _ = try runToEnd(duPath, ["-s", root])
            for _ in 0..<runs { du.append(try runToEnd(duPath, ["-s", root]).seconds) }
        }
        var reports: [IndexChildReport] = []
        for _ in 0..<runs { reports.append(try IndexBenchmark.indexChild(root, env: env)) }
        let result = HardLinkResult(tree: tree, linkSeconds: linkSeconds, du: du, cachewarden: reports)
        log(
            "links: cachewarden start→ready median \(Format.seconds(result.cachewardenMedian)), du -s \(Format.seconds(result.duMedian))"
        )
        if result.countedFiles != files {
            log("links: warning: cachewarden counted \(result.countedFiles) files, the tree has \(files)")
        }
        return result
    }

    /// `<store>/g<k>/d<j>/f<i>.bin` as a second name of each `<root>/…/f<i>.bin` (the layout `TreeBuilder` made).
    private static func linkEveryFile(_ spec: TreeSpec, from root: String, into store: String) throws {
        var made = Set<String>()
        for i in 0..<spec.files {
            let folder = i / spec.fanOut
            let relative = "g\(folder / spec.fanOut)/d\(folder)"
            if made.insert(relative).inserted { try Files.makeDirectory("\(store)/\(relative)") }
            guard link("\(root)/\(relative)/f\(i).bin", "\(store)/\(relative)/f\(i).bin") == 0 else {
                throw BenchError("link f\(i).bin: \(String(cString: strerror(errno)))")
            }
        }
    }
}

extension HardLinkResult: BenchSection {
    var rows: [Report.Row] {
        [
            Report.Row(
                metric: "index \(Format.shortCount(tree.files)) hard-linked files (2nd name outside)",
                cachewarden: Format.seconds(cachewardenMedian),
                peer: du.isEmpty ? "du missing" : "du -s: \(Format.seconds(duMedian))",
                ratio: Format.ratio(cachewardenMedian, du.isEmpty ? nil : duMedian))
        ]
    }

    var jsonKey: String { "hard_links" }

    var json: JSONValue {
        .object([
            ("files", .integer(tree.files)),
            ("link_s", .number(linkSeconds)),
            ("cachewarden_s", .array(cachewarden.map { .number($0.seconds) })),
            ("cachewarden_median_s", .number(cachewardenMedian)),
            ("counted_files", .integer(countedFiles)),
            ("du_s", .array(du.map { .number($0) })),
            ("du_median_s", du.isEmpty ? .null : .number(duMedian)),
            ("ratio_du", .number(du.isEmpty ? nil : cachewardenMedian / duMedian)),
            ("rss_bytes_per_file", .number(cachewarden.first.map { $0.rssBytesPerFile })),
        ])
    }
}
