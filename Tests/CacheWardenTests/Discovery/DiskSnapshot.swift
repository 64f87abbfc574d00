import Foundation
import Glibc

/// Every entry under a folder with its type, size, inode, mtime and ctime (lstat, no symlink followed): two
/// snapshots are equal only if nothing was created, removed, written or renamed in between.
struct DiskSnapshot: Equatable, CustomStringConvertible {
    var entries: [String: [Int64]] = [:]

    init(_ root: String) {
        var stack = [root]
        while let dir = stack.popLast() {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                let path = dir + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                entries[path] = [
                    Int64(st.st_mode), Int64(st.st_size), Int64(st.st_ino),
                    Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                    Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec),
                ]
                if st.st_mode & S_IFMT == S_IFDIR { stack.append(path) }
            }
        }
    }

    var description: String { "\(entries.count) entries" }

    /// The paths that differ between two snapshots.
    func changes(since other: DiskSnapshot) -> [String] {
        Set(entries.keys).union(other.entries.keys).filter { entries[$0] != other.entries[$0] }.sorted()
    }
}
