import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// No fresh file is lost: a client that renames a new file over the name of the file a trim is about to delete
/// (pip, ccache and uv write a temporary file and rename it into place) keeps the new file. The victim is moved
/// into the trash, checked there and only then unlinked (`SafeRemover`): a rename over its name before the move
/// has the new file moved, found not to be the one counted, and put back; one after the move makes a new name.
@Suite(.serialized) struct FreshFileRaceTests {
    /// Keeps old files (`old<n>`, mtime in 2001) coming so that quota trims keep deleting the oldest, and renames
    /// a fresh file (`min_age` keeps fresh files from ever being victims) over the oldest old name still there,
    /// `renames` times; returns the fresh files lost and the trims seen.
    static func race(under base: String, renames: Int) throws -> (lost: [String], trims: Int) {
        let tree = TemporaryTree("cw-race", under: base)
        for i in 0..<200 { tree.write("old\(i)", size: 1_000, mtime: 1_000_000_000 + Double(i)) }
        let h = try WatcherHarness(tree, quota: 150_000, basis: .apparent) { $0.minAge = 3600 }
        var nextOld = 200, oldest = 0
        var placed: [String: String] = [:] // name → the fresh content renamed over it
        for k in 0..<renames {
            for _ in 0..<3 {
                tree.write("old\(nextOld)", size: 1_000, mtime: 1_000_000_000 + Double(nextOld)); nextOld += 1
            }
            while oldest < nextOld && (placed["old\(oldest)"] != nil || !tree.exists("old\(oldest)")) { oldest += 1 }
            guard oldest < nextOld else { continue }
            let name = "old\(oldest)", content = "fresh-\(k)"
            tree.writeText(".tmp-\(k)", content)
            tree.rename(".tmp-\(k)", name)
            placed[name] = content
        }
        #expect(h.totalsMatchDisk(basis: .apparent))
        let lost = placed.filter { name, content in
            (try? String(contentsOfFile: tree.url(name), encoding: .utf8)) != content
        }.map(\.key).sorted()
        return (lost, h.log.trims.count)
    }

    @Test func aFreshFileRenamedOverTheNextVictimIsNeverLost() throws {
        for base in ["/tmp", "/dev/shm"] where FileManager.default.fileExists(atPath: base) {
            // `CACHEWARDEN_RACE_RENAMES=3000` gives the runs (three of them in the closing note).
            let renames = ProcessInfo.processInfo.environment["CACHEWARDEN_RACE_RENAMES"].flatMap(Int.init) ?? 1000
            let (lost, trims) = try Self.race(under: base, renames: renames)
            #expect(trims >= 1, "\(base): \(trims) trims")
            #expect(lost.isEmpty, "\(base): \(lost.count) fresh files lost of \(renames): \(lost.prefix(5))")
            print("FreshFileRaceTests: \(base): \(lost.count) of \(renames) fresh files lost, \(trims) trims")
        }
    }
}
