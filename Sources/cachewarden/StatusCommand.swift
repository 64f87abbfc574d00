import ArgumentParser
import CacheWarden
import Foundation
import Glibc

/// `cachewarden status`: one row per directory (total, files, quota, use, oldest file, free space).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print a size report per directory: a table (with usage bars on a terminal) or JSON lines."
    )

    @OptionGroup var source: SettingsOptions

    @Flag(name: .long, help: "One JSON object per directory instead of a table.")
    var json = false

    @Flag(name: .long, help: "Units of 1000 (kB, MB, GB).")
    var si = false

    @Flag(name: .long, help: "Units of 1024 (KiB, MiB, GiB).")
    var iec = false

    func run() throws {
        guard !(si && iec) else { throw CLIUsageError(message: "give --si or --iec, not both") }
        let settings = try source.load()
        // A report is a scan in observe mode: nothing is watched, and nothing can be deleted.
        let reports = try Watcher.report(settings)
        let binary = iec || (!si && Self.configUsesBinaryUnits(source.config))
        let now = Date()
        if json {
            for r in reports { print(r.jsonLine(now: now), terminator: "") }
            return
        }
        let tty = isatty(1) == 1
        var rows = [["NAME", "PATH", "TOTAL", "FILES", "QUOTA", "USE", "PROTECTED", "OLDEST", "FS FREE"]]
        for r in reports {
            let use = r.totals.quota > 0 ? String(format: "%.0f%%", Self.percent(r)) + (tty ? " " + Self.bar(Self.percent(r)) : "") : "-"
            rows.append([
                r.totals.dir, r.totals.path, Self.size(r.totals.total, binary), String(r.totals.files),
                r.totals.quota > 0 ? Self.size(r.totals.quota, binary) : "none", use,
                r.protectedBytes > 0 ? Self.size(r.protectedBytes, binary) : "-",
                r.oldest.map { Self.age(now.timeIntervalSince($0)) } ?? "-",
                r.filesystemFree.map { Self.size($0, binary) } ?? "?",
            ])
        }
        let widths = (0..<rows[0].count).map { c in rows.map { $0[c].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
        for group in settings.groups {
            let members = reports.filter { $0.group == group.name }
            let sum = members.reduce(Int64(0)) { $0 + $1.totals.total }
            let use = String(format: "%.0f%%", Double(sum) * 100 / Double(max(1, group.quota)))
            print("group \(group.name): \(Self.size(sum, binary)) of \(Self.size(group.quota, binary)) (\(use)) shared by \(members.map(\.totals.dir).joined(separator: ", "))")
        }
    }

    static func percent(_ r: DirectoryStatus) -> Double { r.usePercent ?? 0 }

    static func bar(_ percent: Double) -> String {
        let filled = min(10, Int((percent / 10).rounded()))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 10 - filled) + "]"
    }

    static func size(_ bytes: Int64, _ binary: Bool) -> String {
        let base: Double = binary ? 1024 : 1000
        let units = binary ? ["B", "KiB", "MiB", "GiB", "TiB"] : ["B", "kB", "MB", "GB", "TB"]
        var v = Double(bytes)
        var i = 0
        while v >= base && i < units.count - 1 { v /= base; i += 1 }
        return i == 0 ? "\(bytes)B" : String(format: "%.1f%@", v, units[i])
    }

    static func age(_ seconds: Double) -> String {
        let s = Int(max(0, seconds))
        if s < 120 { return "\(s)s" }
        if s < 7200 { return "\(s / 60)m" }
        if s < 172_800 { return "\(s / 3600)h" }
        return "\(s / 86400)d"
    }

    /// Whether the config file wrote its quotas in 1024-based units (the report then uses them too).
    static func configUsesBinaryUnits(_ file: String?) -> Bool {
        guard let file, let text = try? String(contentsOfFile: file, encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { line in
            line.contains("quota") && line.split(separator: "#").first.map { $0.contains("iB") } == true
        }
    }
}
