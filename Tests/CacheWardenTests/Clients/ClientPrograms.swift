import Foundation
import Glibc
import Testing

// The compilers the client profile tests drive: ccache with gcc, and the Go toolchain.
/// ccache with `CCACHE_DIR = dir`.
struct CCache {
    let dir: String
    init(_ dir: String) { self.dir = dir }

    /// ccache writes its temporary files (preprocessor output, captured stdout/stderr: `tmp/cpp_stdout.tmp.XXXXXX.i`)
    /// to `$XDG_RUNTIME_DIR/ccache-tmp` when that is set, else to `CCACHE_DIR/tmp`. The test pins them inside the
    /// watched cache, as on a CI runner or a service without a login session: then trims run while ccache's
    /// temporary files are being written in the tree (the profile's `*.tmp.*` rule is exercised), and nothing is
    /// left in the user's runtime directory. Other `CCACHE_*` settings of the machine are dropped.
    var environment: [String: String?] { ["CCACHE_DIR": dir, "CCACHE_TEMPDIR": dir + "/tmp", "XDG_RUNTIME_DIR": nil] }

    func run(_ args: [String]) throws -> ClientResult {
        try runClient(which("ccache")!, args, dropping: ["CCACHE_"], setting: environment)
    }

    /// `ccache gcc FLAGS -c src -o obj` for each source, one after the other.
    func compile(_ sources: [String], flags: [String], _ tree: TemporaryTree) throws -> [ClientResult] {
        tree.mkdir("obj")
        return try sources.map { src in
            let obj = tree.url("obj/" + lastComponent(src) + ".o")
            return try run(["gcc"] + flags + ["-c", src, "-o", obj])
        }
    }

    /// One counter of `ccache --print-stats`.
    func counter(_ name: String) throws -> Int {
        let r = try run(["--print-stats"])
        for line in r.output.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count == 2, fields[0] == name, let n = Int(fields[1]) { return n }
        }
        return -1
    }

    /// The cache size ccache reports, in bytes: `cache_size_kibibyte` of `--print-stats` (ccache 4), else the
    /// `cache size` line of `ccache -s` (ccache 3).
    func reportedSize() throws -> Int64? {
        let kib = try counter("cache_size_kibibyte")
        if kib >= 0 { return Int64(kib) * 1024 }
        for line in try run(["-s"]).output.split(separator: "\n") where line.lowercased().hasPrefix("cache size") {
            let words = line.split(separator: " ")
            guard words.count >= 2, let value = Double(words[words.count - 2]) else { continue }
            let unit: Double = ["kB": 1e3, "MB": 1e6, "GB": 1e9][String(words[words.count - 1])] ?? 1
            return Int64(value * unit)
        }
        return nil
    }

    /// `count` C files, each with a table of 5,000 pseudo-random ints: objects of ~20 kB that ccache cannot
    /// compress much, so that entries, not ccache's own small files, make up the cache.
    static func writeSources(_ tree: TemporaryTree, count: Int) -> [String] {
        tree.mkdir("src")
        return (1...count).map { i in
            var state = UInt64(i) &* 6_364_136_223_846_793_005 &+ 1
            let values = (0..<5000).map { _ -> String in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return String(state >> 34)
            }
            let path = tree.url("src/f\(i).c")
            let text =
                "const int table\(i)[] = {\(values.joined(separator: ","))};\nint f\(i)(int x) { return table\(i)[x % 5000] * \(i); }\n"
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }
}

/// A small stdlib-only Go module: geom ← shapes ← report, and a generated package `table` (1,500 functions
/// calling geom, ~4 MB of object code) so that each API change puts megabytes into the cache.
struct GoModule {
    let tree: TemporaryTree
    var root: String { tree.url("mod") }
    var cache: String { tree.url("gocache") }

    init(_ tree: TemporaryTree) { self.tree = tree }

    /// Round `n`: `geom.Scale` has `n` extra parameters, and every caller passes them.
    func write(round n: Int) {
        let params = (0..<n).map { ", k\($0) int" }.joined()
        let args = String(repeating: ", 1", count: n)
        var table = "package table\n\nimport \"example.com/warden/geom\"\n\n"
        for i in 0..<1500 {
            table +=
                "// F\(i) is generated.\nfunc F\(i)(x float64) float64 { if x > \(i) { return geom.Scale(x+\(i)\(args)) * \(i).5 }; s := 0.0; for j := 0; j < \(i % 7 + 2); j++ { s += geom.Scale(float64(j)\(args)) }; return s }\n"
        }
        let files = [
            "go.mod": "module example.com/warden\n\ngo 1.19\n",
            "geom/geom.go":
                "package geom\n\nimport \"math\"\n\n// Scale scales a length.\nfunc Scale(x float64\(params)) float64 { return math.Sqrt(x * x) }\n",
            "shapes/shapes.go":
                "package shapes\n\nimport (\n\t\"strconv\"\n\n\t\"example.com/warden/geom\"\n)\n\ntype Square struct{ Side float64 }\n\nfunc (s Square) String() string { return \"square \" + strconv.FormatFloat(geom.Scale(s.Side\(args)), 'f', 2, 64) }\n",
            "report/report.go":
                "package report\n\nimport (\n\t\"sort\"\n\t\"strings\"\n\n\t\"example.com/warden/shapes\"\n)\n\nfunc Render(s []shapes.Square) string {\n\tnames := make([]string, 0, len(s))\n\tfor _, q := range s {\n\t\tnames = append(names, q.String())\n\t}\n\tsort.Strings(names)\n\treturn strings.ToUpper(strings.Join(names, \",\"))\n}\n",
            "table/table.go": table,
        ]
        for (name, text) in files {
            tree.mkdirs(URL(fileURLWithPath: root + "/" + name).deletingLastPathComponent().path)
            try? text.write(toFile: root + "/" + name, atomically: true, encoding: .utf8)
        }
    }

    /// `go build ./...` with everything Go writes inside the tree and no network.
    func build() throws -> ClientResult {
        let env: [String: String?] = [
            "HOME": tree.url("home"), "GOCACHE": cache, "GOPATH": tree.url("gopath"), "GOFLAGS": "-trimpath",
            "GOPROXY": "off", "GO111MODULE": "on", "CGO_ENABLED": "0", "GOTOOLCHAIN": "local",
            "GOROOT": ProcessInfo.processInfo.environment["GOROOT"],
        ]
        return try runClient(which("go")!, ["build", "./..."], dropping: ["GO", "CGO_"], setting: env, in: root)
    }
}
