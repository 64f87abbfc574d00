import CacheWarden
import CacheWardenFilesystem
import Foundation
import Glibc
import SystemPackage

/// SplitMix64: a tiny seeded generator, so every run builds the same tree.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The shape of an index tree.
struct TreeSpec: Sendable {
    /// Regular files in the tree (the large ones included).
    var files: Int
    /// Files per folder, and folders per group folder.
    var fanOut = 100
    /// Size range of ordinary files, bytes.
    var smallSizes = 1024...65536
    /// How many MiB-sized files replace ordinary ones.
    var largeFiles: Int
    /// Size range of those, bytes.
    var largeSizes = (1 << 20)...(8 << 20)
    /// `true`: set each size with `ftruncate` (a sparse file, no data blocks) instead of writing the bytes.
    var sparse: Bool
    var seed: UInt64 = 0xCAC4E_3A2D

    /// A tree of `files` files with a few large ones (one per 20,000, at least 3).
    init(files: Int, sparse: Bool) {
        self.files = files
        self.sparse = sparse
        largeFiles = min(files, max(3, files / 20_000))
    }

    /// Expected bytes of data, for choosing between real and sparse files.
    var estimatedBytes: Int64 {
        let small = Int64(files - largeFiles) * Int64(smallSizes.lowerBound + smallSizes.upperBound) / 2
        return small + Int64(largeFiles) * Int64(largeSizes.lowerBound + largeSizes.upperBound) / 2
    }
}

/// What was built.
struct TreeInfo: Sendable {
    var files: Int
    var directories: Int
    /// Sum of the files' lengths.
    var bytes: Int64
    var sparse: Bool
    /// Wall seconds to build it (including the final `sync` for real data).
    var seconds: Double
}

/// Builds the index trees: `<root>/g<k>/d<j>/f<i>.bin`, `fanOut` files per folder `d<j>` and `fanOut` folders per
/// group `g<k>`, sizes drawn from a seeded generator (uniform in 1–64 KiB, plus a few of 1–8 MiB).
enum TreeBuilder {
    static func build(at root: String, spec: TreeSpec) throws -> TreeInfo {
        let start = Clock.nanos()
        try Files.makeDirectory(root)
        var rng = SplitMix64(seed: spec.seed)
        // Which files are large: evenly spread, jittered by the generator.
        var large = Set<Int>()
        if spec.largeFiles > 0 {
            let stride = spec.files / spec.largeFiles
            for k in 0..<spec.largeFiles { large.insert(k * stride + Int.random(in: 0..<max(1, stride), using: &rng)) }
        }
        let maxSize = spec.sparse ? 0 : max(spec.smallSizes.upperBound, spec.largeSizes.upperBound)
        let payload = [UInt8]((0..<maxSize).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })
        var directories = 1
        var bytes: Int64 = 0
        /// The folder files go into now (closed as the next one replaces it).
        var current: OwnedDescriptor?
        var lastGroup = -1
        for i in 0..<spec.files {
            if i % spec.fanOut == 0 {
                if Cleanup.shared.isStopping { throw BenchError("interrupted") }
                let folder = i / spec.fanOut
                let group = folder / spec.fanOut
                if group != lastGroup {
                    mkdir("\(root)/g\(group)", 0o755)
                    directories += 1
                    lastGroup = group
                }
                current = nil
                let dir = "\(root)/g\(group)/d\(folder)"
                guard mkdir(dir, 0o755) == 0 || errno == EEXIST else {
                    throw BenchError("mkdir \(dir): \(String(cString: strerror(errno)))")
                }
                directories += 1
                current = try? OwnedDescriptor.opening { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            }
            let size =
                large.contains(i)
                ? Int.random(in: spec.largeSizes, using: &rng)
                : Int.random(in: spec.smallSizes, using: &rng)
            guard let current else { throw BenchError("create f\(i).bin: its folder cannot be opened") }
            let fd = openat(current.fd.rawValue, "f\(i).bin", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw BenchError("create f\(i).bin: \(String(cString: strerror(errno)))") }
            let ok =
                spec.sparse
                ? ftruncate(fd, off_t(size)) == 0
                : payload.withUnsafeBytes {
                    Files.writeAll(FileDescriptor(rawValue: fd), UnsafeRawBufferPointer(rebasing: $0[0..<size]))
                }
            close(fd)
            guard ok else { throw BenchError("write f\(i).bin: \(String(cString: strerror(errno)))") }
            bytes += Int64(size)
        }
        if !spec.sparse {
            // Flush the data now, so that background writeback does not disturb the timings that follow.
            sync()
        }
        return TreeInfo(
            files: spec.files, directories: directories, bytes: bytes, sparse: spec.sparse,
            seconds: Clock.seconds(since: start))
    }

    /// A tree of `count` files of `size` bytes written by a `FileStream` (`<root>/w<j>/f<i>.bin`, oldest first).
    static func uniform(at root: String, count: Int, size: Int, fanOut: Int = 100) throws -> TreeInfo {
        let start = Clock.nanos()
        try Files.makeDirectory(root)
        let stream = FileStream(root: root, size: size, fanOut: fanOut)
        for _ in 0..<count { stream.writeOne() }
        guard stream.errors == 0 else { throw BenchError("\(stream.errors) files could not be written under \(root)") }
        return TreeInfo(
            files: count, directories: 1 + (count + fanOut - 1) / fanOut, bytes: Int64(count * size),
            sparse: false, seconds: Clock.seconds(since: start))
    }
}
