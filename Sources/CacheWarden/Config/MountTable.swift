import Glibc

/// This mount namespace's mounts (`/proc/self/mountinfo`), for telling where else a folder can be seen: a bind
/// mount shows a folder of one filesystem at a second path, and `RootGuard` judges a folder by every path it has,
/// not only by the one written in the config.
package struct MountTable: Sendable {
    /// One line of mountinfo (proc(5)): the mount's ID, the filesystem (its device as `major:minor`, decimal), the
    /// folder of that filesystem it shows (`root`, "/" for the whole filesystem), where (`point`), and the
    /// filesystem's type (after the `-` that ends the optional fields; "" when the line has none).
    package struct Mount: Sendable, Equatable {
        package var id: UInt64
        package var device: String
        package var root: String
        package var point: String
        package var type: String = ""
    }

    package let mounts: [Mount]
    private let byID: [UInt64: Int]
    private let byDevice: [String: [Int]]

    package init(mounts: [Mount]) {
        self.mounts = mounts
        var byID: [UInt64: Int] = [:], byDevice: [String: [Int]] = [:]
        for (i, m) in mounts.enumerated() {
            byID[m.id] = i
            byDevice[m.device, default: []].append(i)
        }
        self.byID = byID
        self.byDevice = byDevice
    }

    /// The calling process's mounts; an empty table when mountinfo cannot be read (then only the paths as
    /// written and the device and inode checks apply).
    package static func current() -> MountTable {
        guard let text = try? FileContents.load("/proc/self/mountinfo", limit: 64 << 20) else {
            return MountTable(mounts: [])
        }
        return MountTable(parsing: text)
    }

    /// Parses mountinfo's text; lines it cannot read are skipped.
    package init(parsing text: String) {
        var mounts: [Mount] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, let id = UInt64(fields[0]) else { continue }
            let type = fields[5...].firstIndex(of: "-").flatMap { $0 + 1 < fields.count ? fields[$0 + 1] : nil }
            mounts.append(
                Mount(
                    id: id, device: String(fields[2]), root: Self.unescape(fields[3]), point: Self.unescape(fields[4]),
                    type: type.map(String.init) ?? ""))
        }
        self.init(mounts: mounts)
    }

    /// mountinfo writes a space, tab, newline and backslash in a path as `\040`, `\011`, `\012`, `\134`.
    static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var out: [UInt8] = []
        let bytes = Array(field.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count,
                let code = UInt8(String(decoding: bytes[i + 1...i + 3], as: UTF8.self), radix: 8)
            {
                out.append(code)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Mount `id`, when the table lists it.
    package func mount(id: UInt64) -> Mount? { byID[id].map { mounts[$0] } }

    /// Which folder of which filesystem the path shows: the device (`major:minor`) of mount `mountID` and the
    /// path's place inside that filesystem; nil when the table does not list the mount.
    package func location(of path: String, mountID: UInt64) -> (device: String, path: String)? {
        guard let i = byID[mountID], let inFilesystem = Self.rebase(path, from: mounts[i].point, to: mounts[i].root)
        else {
            return nil
        }
        return (mounts[i].device, inFilesystem)
    }

    /// Every path at which the folder at `path` (absolute, symlinks resolved, on mount `mountID`) can be seen in
    /// this namespace, `path` first: its place in its filesystem, shown by each mount of that filesystem that
    /// shows that place. Paths hidden under a later mount are listed too (a guard would rather refuse on a hidden
    /// path than miss one). Nil when the table does not list the mount.
    package func aliases(of path: String, mountID: UInt64) -> [String]? {
        guard let (device, inFilesystem) = location(of: path, mountID: mountID) else { return nil }
        var found = [path]
        for j in byDevice[device] ?? [] {
            if let seen = Self.rebase(inFilesystem, from: mounts[j].root, to: mounts[j].point), !found.contains(seen) {
                found.append(seen)
            }
        }
        return found
    }

    /// The mounts whose mount point lies strictly inside `path`.
    package func mounts(inside path: String) -> [Mount] {
        mounts.filter { $0.point != path && PathResolver.isWithin($0.point, path) }
    }

    /// The mount with ID `id`.
    package func mount(_ id: UInt64) -> Mount? { byID[id].map { mounts[$0] } }

    /// `path` (within `from`) moved to the same place under `to`; nil when it is not within `from`.
    static func rebase(_ path: String, from: String, to: String) -> String? {
        guard PathResolver.isWithin(path, from) else { return nil }
        let rest = from == "/" ? path.dropFirst() : path.dropFirst(from.count).drop(while: { $0 == "/" })
        return rest.isEmpty ? to : PathResolver.absolute(String(rest), relativeTo: to)
    }
}
