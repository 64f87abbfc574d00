import Foundation
import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// Registering many directories costs time in proportion to their number: `check` of 5,000 took 47.7 s when the
/// nesting check compared every pair, and `run` searched the registered names and IDs once per directory.
@Suite struct RegistrationScalingTests {
    static func dirs(_ paths: [String]) -> [DirectorySettings] {
        paths.enumerated().map { DirectorySettings(name: "d\($0.offset)", path: $0.element) }
    }

    static func overlap(_ paths: [String]) -> String? {
        PathResolver.firstOverlap(dirs(paths)).map { "\($0.0.name) \($0.1.name)" }
    }

    @Test func theFirstNestedOrEqualPathIsFoundWithTheEarliestItNestsWith() {
        #expect(Self.overlap(["/a/b", "/a/bc", "/a/b2/c", "/ab"]) == nil, "a common prefix is not nesting")
        #expect(Self.overlap(["/a/b", "/x", "/a/b/c"]) == "d0 d2") // inside an earlier one
        #expect(Self.overlap(["/a/b/c", "/x", "/a"]) == "d0 d2") // holding an earlier one
        #expect(Self.overlap(["/x", "/a/b/c", "/a/b/d", "/a"]) == "d1 d3")
        #expect(Self.overlap(["/x", "/y", "/x"]) == "d0 d2") // the same path twice
        #expect(Self.overlap(["/x/y", "/"]) == "d0 d1" && Self.overlap(["/", "/x/y"]) == "d0 d1")
        #expect(Self.overlap(["/q", "/a/b", "/c", "/a/b/c/d", "/a"]) == "d1 d3", "the first later one that nests")
        #expect(Self.overlap([]) == nil && Self.overlap(["/"]) == nil)
    }

    @Test func theNestingCheckAgreesWithComparingEveryPair() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let paths = (0..<Int.random(in: 1...8, using: &generator)).map { _ in
                "/"
                    + (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                        ["a", "b", "ab"].randomElement(using: &generator)!
                    }
                    .joined(separator: "/")
            }
            var expected: (Int, Int)?
            outer: for later in paths.indices {
                for earlier in paths[..<later].indices
                where PathResolver.isWithin(paths[earlier], paths[later])
                    || PathResolver.isWithin(paths[later], paths[earlier])
                {
                    expected = (earlier, later)
                    break outer
                }
            }
            #expect(Self.overlap(paths) == expected.map { "d\($0.0) d\($0.1)" }, "\(paths)")
        }
    }

    @Test func rootIDsAreTheLowestFreeAndNamesAreFoundAfterRemovals() {
        var registry = RootRegistry()
        func add(_ name: String) -> RootID {
            let id = registry.nextID
            registry.add(
                RootRuntime(
                    id: id, settings: DirectorySettings(name: name, path: "/c/\(name)"), path: "/c/\(name)",
                    basis: .apparent))
            return id
        }
        #expect((0..<5).map { add("r\($0)") } == (0..<5).map { RootID(UInt32($0)) })
        registry.remove(RootID(3))
        registry.remove(RootID(1))
        registry.remove(RootID(1)) // twice: nothing more happens
        #expect(registry.id(named: "r1") == nil && registry.id(named: "r4") == RootID(4))
        #expect(add("new1") == RootID(1) && add("new3") == RootID(3) && add("new5") == RootID(5))
        #expect(
            registry.id(named: "new3") == RootID(3) && registry.order == [0, 2, 4, 1, 3, 5].map { RootID(UInt32($0)) })
        registry[RootID(2)]?.lost = "is gone"
        #expect(registry[RootID(2)]?.lost == "is gone" && registry.id(named: "r2") == RootID(2))
        registry.removeAll()
        #expect(registry.isEmpty && registry.nextID == RootID(0) && registry.id(named: "r0") == nil)
    }

    /// Seconds `body` takes, the least of `runs` (the others had the machine's noise).
    static func seconds(runs: Int = 2, _ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<runs {
            let start = Date()
            try body()
            best = min(best, Date().timeIntervalSince(start))
        }
        return best
    }

    @Test func registeringFourTimesTheRootsTakesAboutFourTimesAsLong() {
        func register(_ n: Int) -> Double {
            Self.seconds {
                var registry = RootRegistry()
                for i in 0..<n {
                    let name = "d\(i)"
                    precondition(registry.id(named: name) == nil)
                    registry.add(
                        RootRuntime(
                            id: registry.nextID, settings: DirectorySettings(name: name, path: "/c/\(name)"),
                            path: "/c/\(name)", basis: .apparent))
                }
            }
        }
        let (small, large) = (register(4_000), register(16_000))
        // Linear is ×4; comparing with every registered root (as before) was ×16.
        #expect(large / small < 8, "4,000 roots in \(small) s, 16,000 in \(large) s")
    }

    @Test func checkOfFourTimesTheDirectoriesTakesAboutFourTimesAsLong() throws {
        let tree = TemporaryTree()
        func config(_ n: Int) throws -> String {
            let file = tree.url("c\(n).conf")
            var text = ""
            for i in 0..<n {
                tree.mkdir("d/\(i)")
                text += "dir.d\(i).path = d/\(i)\ndir.d\(i).quota = 1MB\n"
            }
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            return file
        }
        let (small, large) = (try config(2_000), try config(8_000))
        func check(_ file: String) throws -> Double {
            try Self.seconds {
                let r = try runProcess(cachewardenBinary(), ["check", "--config", file])
                #expect(r.status == 0, "\(r.err)")
            }
        }
        let (a, b) = (try check(small), try check(large))
        // Linear is ×4 (plus the start-up both share); comparing every pair of directories was ×16.
        #expect(b / a < 8, "check of 2,000 directories took \(a) s, of 8,000 \(b) s")
        #expect(b < 30, "check of 8,000 directories took \(b) s")
    }
}
