import CacheWarden
import CacheWardenFilesystem
import Dispatch
import Foundation
import Glibc
import SystemPackage

/// Writes numbered files of one size as fast as the syscalls allow: a new folder (`<root>/<prefix><n>`) every
/// `fanOut` files, then one `openat`/`write`/`close` per file, with the name formatted in place (no `String` per
/// file). File `i` is `<root>/<prefix><i / fanOut>/f<i>.bin`.
final class FileStream {
    let root: String
    let size: Int
    let fanOut: Int
    let prefix: String
    /// Files written so far (also the index of the next one).
    private(set) var written = 0
    /// Writes that failed (the file is then skipped), and the errno of the last one.
    private(set) var errors = 0
    private(set) var lastError: Int32 = 0
    /// The folder files are being written into now (closed as the next one replaces it).
    private var folder: OwnedDescriptor?
    private var name = [CChar](repeating: 0, count: 32)
    private let payload: [UInt8]

    /// A stream writing `size`-byte files under `root`, which must exist.
    init(root: String, size: Int, fanOut: Int = 100, prefix: String = "w", startingAt first: Int = 0) {
        self.root = root
        self.size = size
        self.fanOut = fanOut
        self.prefix = prefix
        self.written = first
        payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    }

    /// The path of file `index` of a stream with these parameters.
    static func path(root: String, prefix: String, fanOut: Int, index: Int) -> String {
        "\(root)/\(prefix)\(index / fanOut)/f\(index).bin"
    }

    /// Writes the next file; returns `false` when it could not be created, or the benchmark is being interrupted.
    @discardableResult
    func writeOne() -> Bool {
        if Cleanup.shared.isStopping { return false }
        if written % fanOut == 0 || folder == nil {
            folder = nil
            let dir = "\(root)/\(prefix)\(written / fanOut)"
            mkdir(dir, 0o755)
            folder = try? OwnedDescriptor.opening { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        }
        formatName(written)
        written += 1
        guard let folder else { errors += 1; lastError = errno; return false }
        // A client's write: opened and closed raw, as one would.
        let fd = openat(folder.fd.rawValue, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { errors += 1; lastError = errno; return false }
        let ok = payload.withUnsafeBytes { Files.writeAll(FileDescriptor(rawValue: fd), $0) }
        if !ok { errors += 1; lastError = errno }
        close(fd)
        return ok
    }

    /// "f<index>.bin" into `name`, NUL-terminated.
    private func formatName(_ index: Int) {
        var digits: [CChar] = []
        var n = index
        repeat {
            digits.append(CChar(48 + n % 10))
            n /= 10
        } while n > 0
        var i = 0
        name[i] = CChar(UInt8(ascii: "f")); i += 1
        for d in digits.reversed() { name[i] = d; i += 1 }
        for c in ".bin".utf8 { name[i] = CChar(c); i += 1 }
        name[i] = 0
    }
}

/// The outcome of a burst of writes.
struct BurstResult: Sendable {
    var files: Int
    var errors: Int
    /// Wall seconds from the first `openat` to the last `close`.
    var seconds: Double
    /// `Clock.nanos()` when the last file was closed.
    var endedAt: UInt64

    /// Files per second.
    var rate: Double { seconds > 0 ? Double(files) / seconds : 0 }
}

/// Runs a `FileStream` burst on a thread of its own (so the writer has a core to itself) and waits for it. With
/// `rate`, file `i` is not begun before `i / rate` seconds from the start (a paced writer: the same speed under
/// any watcher, so that the watcher's cost per file does not follow how much it slows the writer). With `limit`,
/// the burst ends after that many seconds with the files written by then (a paced writer the disk cannot follow).
enum BurstWriter {
    static func run(
        root: String, count: Int, size: Int, fanOut: Int = 100, rate: Double? = nil,
        limit: Double? = nil
    ) -> BurstResult {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<BurstResult?>(nil)
        let thread = Thread {
            let stream = FileStream(root: root, size: size, fanOut: fanOut)
            let start = Clock.nanos()
            let stop = limit.map { start + UInt64($0 * 1e9) }
            for i in 0..<count {
                if let stop, Clock.nanos() >= stop { break }
                if let rate {
                    let due = start + UInt64(Double(i) / rate * 1e9), now = Clock.nanos()
                    if due > now { Clock.sleep(Double(due - now) / 1e9) }
                }
                stream.writeOne()
            }
            let end = Clock.nanos()
            result.withLock {
                $0 = BurstResult(
                    files: stream.written - stream.errors, errors: stream.errors,
                    seconds: Clock.seconds(from: start, to: end), endedAt: end)
            }
            done.signal()
        }
        thread.name = "bench.writer"
        thread.start()
        done.wait()
        return result.value!
    }
}

/// A finished `FileStream` tree (`files` files of `size` bytes, prefix "w", 100 per folder) kept by one benchmark
/// for the next, which is cheaper than writing an identical one again.
struct SpareTree: Sendable {
    /// How many the throughput runs keep: the half-tree trim uses two (its tree and `xargs rm`'s). Keeping all
    /// four full-size trees can fill a small tmpfs, and the last writers would then make empty files.
    static let kept = 2

    var path: String
    var files: Int
    var size: Int

    /// Cuts the tree down to its first `count` files (the oldest; the rest goes to the trash) and renames it to
    /// `newPath`; `false` (and the tree discarded) when it is too small or has another file size.
    func reuse(as newPath: String, count: Int, size wanted: Int) -> Bool {
        guard files >= count, size == wanted else {
            Files.discard(path)
            return false
        }
        let fanOut = 100
        let firstWholeFolder = (count + fanOut - 1) / fanOut
        let lastFolder = (files - 1) / fanOut
        if firstWholeFolder <= lastFolder {
            for folder in firstWholeFolder...lastFolder { Files.discard("\(path)/w\(folder)") }
        }
        for i in count..<min(files, firstWholeFolder * fanOut) {
            unlink(FileStream.path(root: path, prefix: "w", fanOut: fanOut, index: i))
        }
        guard rename(path, newPath) == 0 else {
            Files.discard(path)
            return false
        }
        return true
    }
}
