import Foundation
import Glibc
import Synchronization
import Testing
@testable import CacheWarden

/// A unit leaves its client's view in one step: a reader listing a unit while a trim evicts it sees it whole or
/// not at all. Units of 40 files are built outside the root and renamed in (as uv and the Hugging Face hub make
/// theirs), quota trims evict them, and two threads list every unit they find, counting partial looks.
@Suite(.serialized) struct UnitAtomicityTests {
    static let filesPerUnit = 40

    /// Lists every unit under `root` until `stop`; returns (looks, partial looks).
    static func reader(_ root: String, stop: StopFlag) -> (looks: Int, partial: Int) {
        var looks = 0, partial = 0
        while !stop.isSet {
            guard let units = try? FileManager.default.contentsOfDirectory(atPath: root) else { continue }
            for unit in units where unit.hasPrefix("unit") {
                guard let files = try? FileManager.default.contentsOfDirectory(atPath: root + "/" + unit) else {
                    continue
                }
                looks += 1
                if !files.isEmpty && files.count < filesPerUnit { partial += 1 }
            }
        }
        return (looks, partial)
    }

    /// Builds units outside the root and renames them in, `rate` a second, for `seconds`, while two readers
    /// list; returns the readers' (looks, partial) and the trims seen.
    static func run(under base: String, backend: BackendChoice, seconds: Double, rate: Double) throws -> (Int, Int, Int)
    {
        let staging = TemporaryTree("cw-staging", under: base), tree = TemporaryTree("cw-units", under: base)
        let h = try WatcherHarness(tree, quota: 400_000, basis: .apparent) {
            $0.evictUnit = .entry
            $0.backend = backend
            $0.pollInterval = 1
        }
        let stop = StopFlag()
        let results = Mutex<[(Int, Int)]>([])
        // Dedicated threads, not the global queue: under a loaded parallel test run its few workers may all be
        // busy, and readers that never start see nothing (CI once counted 0 looks in 4 s).
        for _ in 0..<2 {
            Foundation.Thread.detachNewThread {
                let r = reader(tree.path, stop: stop)
                results.withLock { $0.append(r) }
            }
        }
        let start = Date()
        var n = 0
        while Date().timeIntervalSince(start) < seconds {
            for f in 0..<filesPerUnit { staging.write("unit\(n)/f\(f)", size: 500) }
            staging.rename("unit\(n)", "../\(PathResolver.lastComponent(tree.path))/unit\(n)")
            n += 1
            let next = start.addingTimeInterval(Double(n) / rate)
            if next > Date() { usleep(useconds_t(next.timeIntervalSinceNow * 1e6)) }
        }
        stop.set()
        let deadline = Date().addingTimeInterval(30)
        while results.withLock({ $0.count }) < 2 && Date() < deadline { usleep(1000) }
        #expect(h.totalsMatchDisk(basis: .apparent))
        let all = results.withLock { $0 }
        return (all.map(\.0).reduce(0, +), all.map(\.1).reduce(0, +), h.log.trims.count)
    }

    @Test(arguments: testedBackends)
    func aReaderSeesAUnitWholeOrNotAtAll(_ backend: BackendChoice) throws {
        for base in ["/tmp", "/dev/shm"] where FileManager.default.fileExists(atPath: base) {
            // `CACHEWARDEN_UNIT_SECONDS=25` gives the full run (the units' own figures in the closing note).
            let seconds = ProcessInfo.processInfo.environment["CACHEWARDEN_UNIT_SECONDS"].flatMap(Double.init) ?? 4
            let (looks, partial, trims) = try Self.run(under: base, backend: backend, seconds: seconds, rate: 50)
            print("UnitAtomicityTests: \(base), \(backend): \(partial) partial in \(looks) looks, \(trims) trims")
            #expect(trims >= 1, "\(base): \(trims) trims")
            #expect(looks > 1000, "\(base): \(looks) looks")
            #expect(partial == 0, "\(base), \(backend): \(partial) partial units in \(looks) looks")
        }
    }
}

/// A flag threads poll to know when to stop.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
