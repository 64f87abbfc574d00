import Synchronization
import SystemPackage
@testable import CacheWarden

/// A filesystem whose free space the test decides: a fixed answer it changes between steps, or a model computed
/// at each look (e.g. its size minus what a folder holds).
final class ScriptedDiskProbe: DiskProbe {
    private let answer: Mutex<@Sendable (String) -> Result<FreeSpace, Errno>>
    private let calls = Mutex(0)

    init(_ model: @escaping @Sendable (String) -> Result<FreeSpace, Errno>) { answer = Mutex(model) }

    convenience init(free: Int64, size: Int64) { self.init { _ in .success(FreeSpace(free: free, size: size)) } }

    /// From now on every look sees this much free space.
    func set(free: Int64, size: Int64) { answer.withLock { $0 = { _ in .success(FreeSpace(free: free, size: size)) } } }

    /// From now on every look fails with `error`.
    func fail(_ error: Errno) { answer.withLock { $0 = { _ in .failure(error) } } }

    /// How many times the watcher looked.
    var lookups: Int { calls.withLock { $0 } }

    func freeSpace(of path: String) throws(Errno) -> FreeSpace {
        calls.withLock { $0 += 1 }
        return try answer.withLock { $0 }(path).get()
    }
}
