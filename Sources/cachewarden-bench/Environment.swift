import CacheWarden
import Foundation
import Glibc

/// Facts about the machine and the tools found, printed above the table and stored in the JSON summary.
struct Environment {
    /// This benchmark's own executable (re-executed for the child measurements).
    var selfExecutable: String
    /// `inotifywait`, when installed.
    var inotifywait: String?
    /// `du`.
    var du: String?
    /// `xargs`.
    var xargs: String?
    /// The `cachewarden` CLI used as the throughput watcher, when found.
    var cli: String?
    /// `stat -f -c %T` of the work folder (e.g. `ext2/ext3`, `tmpfs`).
    var statFilesystem: String
    /// The filesystem type in `/proc/mounts` of the mount holding the work folder (e.g. `ext4`).
    var mountType: String
    /// That mount's point and device.
    var mountPoint: String
    var mountDevice: String
    var maxUserWatches: Int
    var maxQueuedEvents: Int
    var cpus: Int
    var kernel: String

    /// Looks everything up for a work folder at `workDirectory`; `cli` overrides the search for the CLI binary.
    static func detect(workDirectory: String, cli explicitCLI: String?) -> Environment {
        let selfExe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        let statType =
            (try? runToEnd(which("stat") ?? "/usr/bin/stat", ["-f", "-c", "%T", workDirectory]).output)?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        let mount = mountEntry(for: workDirectory)
        var u = utsname()
        uname(&u)
        let release = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return Environment(
            selfExecutable: selfExe,
            inotifywait: which("inotifywait"),
            du: which("du"),
            xargs: which("xargs"),
            cli: findCLI(explicit: explicitCLI, selfExecutable: selfExe),
            statFilesystem: statType.isEmpty ? "?" : statType,
            mountType: mount.type, mountPoint: mount.point, mountDevice: mount.device,
            maxUserWatches: readInt("/proc/sys/fs/inotify/max_user_watches"),
            maxQueuedEvents: readInt("/proc/sys/fs/inotify/max_queued_events"),
            cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))),
            kernel: release)
    }

    /// The first executable named `name` on `PATH`.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The `cachewarden` CLI: `explicit`, else next to this binary, else `.build/release` or `.build/debug` of the
    /// current folder.
    static func findCLI(explicit: String?, selfExecutable: String) -> String? {
        if let explicit { return access(explicit, X_OK) == 0 ? explicit : nil }
        let here = (selfExecutable as NSString).deletingLastPathComponent
        for candidate in ["\(here)/cachewarden", ".build/release/cachewarden", ".build/debug/cachewarden"]
        where access(candidate, X_OK) == 0 {
            return candidate.hasPrefix("/") ? candidate : FileManager.default.currentDirectoryPath + "/" + candidate
        }
        return nil
    }

    /// The `/proc/mounts` entry with the longest mount point containing `path`.
    static func mountEntry(for path: String) -> (device: String, point: String, type: String) {
        // Read to its end: Foundation's `String(contentsOfFile:)` gives one page of a /proc file.
        guard let text = try? FileContents.load("/proc/mounts", limit: 64 << 20) else { return ("?", "?", "?") }
        var best: (device: String, point: String, type: String) = ("?", "?", "?")
        var bestLength = -1
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 3 else { continue }
            let point = f[1].replacingOccurrences(of: "\\040", with: " ")
            let prefix = point == "/" ? "/" : point + "/"
            if (path == point || path.hasPrefix(prefix)) && point.count >= bestLength {
                best = (String(f[0]), point, String(f[2]))
                bestLength = point.count
            }
        }
        return best
    }

    private static func readInt(_ path: String) -> Int {
        Int((try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "")
            ?? 0
    }

    /// One line per fact, for the top of the report.
    var summaryLines: [String] {
        [
            "filesystem: \(mountType) (stat -f: \(statFilesystem)) on \(mountDevice) mounted at \(mountPoint)",
            "machine: \(cpus) CPUs, Linux \(kernel); inotify max_user_watches=\(maxUserWatches), max_queued_events=\(maxQueuedEvents)",
            "peers: du=\(du ?? "missing"), inotifywait=\(inotifywait ?? "missing (install inotify-tools)"), xargs=\(xargs ?? "missing")",
            "watcher child: \(cli.map { "cachewarden CLI at \($0)" } ?? "cachewarden CLI not found: the throughput section needs it (--cli)")",
        ]
    }
}
