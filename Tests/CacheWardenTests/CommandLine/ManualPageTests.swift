import CacheWarden
import CacheWardenCommandLine
import Foundation
import Testing

/// Both manual pages as `make man` writes them, checked by groff itself (warnings as errors), and complete: every
/// visible command and option of `cachewarden`, every key of the config table.
@Suite struct ManualPageTests {
    /// groff's warnings on `page` (empty when it formats cleanly).
    static func groffWarnings(_ page: String) throws -> String {
        let tree = TemporaryTree("cw-man")
        try page.write(toFile: tree.url("page"), atomically: true, encoding: .utf8)
        let r = try runProcess(try #require(which("groff")), ["-man", "-ww", "-z", "-Tutf8", tree.url("page")])
        return r.status == 0 ? r.err : "exit \(r.status): \(r.err)"
    }

    @Test(.enabled(if: which("groff") != nil, "needs groff"))
    func cachewardenOneNamesEveryCommandAndOptionAndGroffFormatsIt() throws {
        let r = try runProcess(cachewardenBinary(), ["manual"])
        try #require(r.status == 0, "\(r.err)")
        #expect(try Self.groffWarnings(r.out).isEmpty)
        #expect(r.out.hasPrefix(".TH CACHEWARDEN 1 "))
        for command in ["run", "check", "status", "trim", "clear", "reload", "events", "discover"] {
            #expect(r.out.contains(".SS cachewarden \(command)\n"), "\(command) missing")
        }
        for option in ["config", "dry\\-run", "control\\-socket", "max\\-buffered", "time\\-limit", "version"] {
            #expect(r.out.contains("\\fB\\-\\-\(option)\\fR"), "--\(option) missing")
        }
        #expect(!r.out.contains("keys") && !r.out.contains(".SS cachewarden manual"))
    }

    @Test(.enabled(if: which("groff") != nil, "needs groff"))
    func theConfigPageGroffFormatsCleanly() throws {
        let r = try runProcess(cachewardenBinary(), ["keys", "--format", "man"])
        try #require(r.status == 0, "\(r.err)")
        #expect(try Self.groffWarnings(r.out).isEmpty)
        #expect(r.out == ConfigKeyDocs.man(version: CacheWardenVersion.current))
    }
}
