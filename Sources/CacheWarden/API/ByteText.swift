import Foundation

/// Sizes for people: `1.5GiB` (units of 1024) or `1.6GB` (units of 1000). The one formatter of the CLI's table and
/// systemd's status line.
public enum ByteText {
    public static func format(_ bytes: Int64, binary: Bool) -> String {
        let base: Double = binary ? 1024 : 1000
        let units = binary ? ["B", "KiB", "MiB", "GiB", "TiB"] : ["B", "kB", "MB", "GB", "TB"]
        var v = Double(bytes)
        var i = 0
        while abs(v) >= base && i < units.count - 1 { v /= base; i += 1 }
        return i == 0 ? "\(bytes)B" : String(format: "%.1f%@", v, units[i])
    }

    public static func iec(_ bytes: Int64) -> String { format(bytes, binary: true) }
}
