import Foundation
import Testing
@testable import CacheWardenService

/// `StartupPages.release()` in this very process: the program's read-only pages leave its resident set, the
/// process goes on running the code and reading the constants they held (they come back from the page cache),
/// and its writable data is untouched.
@Suite struct StartupPagesTests {
    /// Resident kB of this program's own file mappings that are not writable (code, read-only data).
    static func residentReadOnlyProgramKB() throws -> Int {
        let exe = try #require(try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        var total = 0, counting = false
        for line in try #require(procText("/proc/self/smaps")).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, range.contains("-"), fields.count >= 5, range.first?.isHexDigit == true {
                counting = fields.count >= 6 && fields[5] == exe && !fields[1].contains("w")
            } else if counting, fields.first == "Rss:", let kB = Int(fields[1]) {
                total += kB
            }
        }
        return total
    }

    static let table: [String: Int] = ["a": 1, "b": 2]

    @Test func readOnlyPagesLeaveTheResidentSetAndComeBackOnUse() throws {
        let before = try Self.residentReadOnlyProgramKB()
        let advised = try #require(StartupPages.release())
        #expect(advised > 0)
        let after = try Self.residentReadOnlyProgramKB()
        // The scan of smaps itself touches some pages again; most stay out.
        #expect(after < before / 2, "resident read-only program pages: \(before) kB before, \(after) kB after")
        // Code, constants and data still work.
        #expect(Self.table["b"] == 2 && String(describing: [1, 2, 3]) == "[1, 2, 3]")
        #expect(try JSONValue(parsing: Array(#"{"ok":[1,2.5,"x"]}"#.utf8))["ok"]?.array?.count == 3)
    }
}
