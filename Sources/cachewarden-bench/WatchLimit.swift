import Foundation
import Glibc
import SystemPackage

/// `fs.inotify.max_user_watches` raised for the backends section and put back after it, so that inotify is
/// measured without folders served past its limit (what a user who raised it for a big tree runs). Needs root;
/// without it the limit is left alone and the section says which limit it ran under.
struct WatchLimit {
    static let path = "/proc/sys/fs/inotify/max_user_watches"

    let original: Int
    let raisedTo: Int

    /// Raises the limit to `wanted` when it is lower and this process may; nil when nothing was changed.
    static func raise(to wanted: Int, log: (String) -> Void) -> WatchLimit? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let current = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), current < wanted
        else { return nil }
        guard write(wanted) else {
            log("backends: cannot raise \(path) to \(wanted) (not root?): inotify runs under its limit of \(current)")
            return nil
        }
        log("backends: \(path) raised from \(current) to \(wanted) for this section")
        return WatchLimit(original: current, raisedTo: wanted)
    }

    func restore(log: (String) -> Void) {
        if Self.write(original) {
            log("backends: \(Self.path) restored to \(original)")
        } else {
            log("backends: could not restore \(Self.path) to \(original)")
        }
    }

    private static func write(_ value: Int) -> Bool {
        let fd = open(path, O_WRONLY | O_TRUNC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let text = Array("\(value)\n".utf8)
        return text.withUnsafeBytes { Files.writeAll(FileDescriptor(rawValue: fd), $0) }
    }
}
