/// Sizes for people: `1.5GiB` (units of 1024) or `1.6GB` (units of 1000). The one formatter of the CLI's table and
/// systemd's status line.
///
/// Written with integer math rather than `String(format:)`, which lives in Foundation and would pull its ICU data
/// into the static binary (larger than the rest of it). The value is rounded to one decimal as `printf("%.1f")` rounds
/// an exact value: to nearest, ties to even (`1280` bytes is `1.2KiB`, as before). A value just under the next unit
/// keeps its unit, as `%.1f` did (`1048575` bytes is `1024.0KiB`).
public enum ByteText {
    private static let binaryUnits = ["B", "KiB", "MiB", "GiB", "TiB"]
    private static let decimalUnits = ["B", "kB", "MB", "GB", "TB"]

    public static func format(_ bytes: Int64, binary: Bool) -> String {
        let base: UInt64 = binary ? 1024 : 1000
        let units = binary ? binaryUnits : decimalUnits
        let magnitude = bytes.magnitude
        var divisor: UInt64 = 1
        var i = 0
        while i < units.count - 1 && magnitude / divisor >= base {
            divisor *= base
            i += 1
        }
        guard i > 0 else { return "\(bytes)B" }
        let tenths = roundedQuotient(magnitude, by: divisor, scale: 10)
        return (bytes < 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)" + units[i]
    }

    public static func iec(_ bytes: Int64) -> String { format(bytes, binary: true) }

    /// `part` as a whole percentage of `whole` (`"39%"`), rounded as `printf("%.0f%%")` rounds an exact value.
    /// A `whole` of 0 or less counts as 1.
    public static func percent(_ part: Int64, of whole: Int64) -> String {
        let p = roundedQuotient(part.magnitude, by: UInt64(max(1, whole)), scale: 100)
        return (part < 0 && p > 0 ? "-" : "") + "\(p)%"
    }

    /// `value × scale ÷ divisor`, rounded to nearest with ties to even, without overflowing for any `UInt64`.
    static func roundedQuotient(_ value: UInt64, by divisor: UInt64, scale: UInt64) -> UInt64 {
        let product = scale.multipliedFullWidth(by: value)
        guard product.high < divisor else { return .max }
        let (q, r) = divisor.dividingFullWidth(product)
        // r < divisor, so 2r can overflow only when divisor > UInt64.max / 2: compare r with divisor - r instead.
        let rest = divisor - r
        if r > rest || (r == rest && q % 2 == 1) { return q + 1 }
        return q
    }
}
