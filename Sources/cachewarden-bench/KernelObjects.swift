import Foundation

/// What a process holds in the kernel to follow a tree: its inotify watches and fanotify marks (from
/// /proc/self/fdinfo), and the kernel's unreclaimable slab, where watches and marks live.
enum KernelObjects {
    /// (inotify watches, fanotify marks) of this process now.
    static func notificationObjects() -> (watches: Int, marks: Int) {
        var watches = 0, marks = 0
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
            guard target.hasPrefix("anon_inode:"),
                let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)
            else { continue }
            for line in info.split(separator: "\n") {
                if target == "anon_inode:inotify" && line.hasPrefix("inotify wd:") { watches += 1 }
                if target == "anon_inode:[fanotify]" && line.hasPrefix("fanotify ") && line.contains("mflags:") {
                    marks += 1
                }
            }
        }
        return (watches, marks)
    }

    /// `SUnreclaim` of /proc/meminfo, in bytes (0 when unreadable).
    static func unreclaimableSlab() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("SUnreclaim:") })
        else { return 0 }
        return (Int64(line.split(whereSeparator: { $0 == " " }).dropFirst().first ?? "") ?? 0) * 1024
    }
}
