import Foundation
import Glibc
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenService

/// The control socket's file: created with its mode, a stale one replaced, a live one refused, removed on stop.
@Suite struct ControlSocketFileTests {
    private func watcher(_ tree: TemporaryTree, sinks: [any EventSink]) throws -> Watcher {
        tree.mkdir("cache")
        let w = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "cache", path: tree.url("cache"))]),
            sinks: sinks)
        try w.start()
        return w
    }

    private func mode(_ path: String) -> (mode: mode_t, gid: gid_t, isSocket: Bool) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return (0, 0, false) }
        return (st.st_mode & 0o777, st.st_gid, st.st_mode & S_IFMT == S_IFSOCK)
    }

    @Test func theSocketIsOwnerOnlyByDefaultAndGoesWhenTheWatcherStops() throws {
        let tree = TemporaryTree()
        let server = ControlServer(path: tree.url("cw.sock"))
        let w = try watcher(tree, sinks: [server])
        try server.listen()
        server.serve(watcher: w) { nil }
        #expect(mode(server.path) == (0o600, getgid(), true))
        w.stop()
        #expect(!tree.exists("cw.sock"))
        #expect(try ControlClient(path: server.path) == nil)
    }

    /// The file is owner-only from the moment it exists, with the process's umask left as it is (a umask narrowed
    /// for the bind made folders that parallel tests created meanwhile unsearchable).
    @Test func theSocketFileIsOwnerOnlyFromItsCreationWhateverTheUmask() throws {
        let tree = TemporaryTree()
        // Read, not set: umask(2) would change it for every test running beside this one.
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let field = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") })
        let wide = try #require(mode_t(field.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8))
        let plain = try UnixSocket.make(Int32(SOCK_STREAM.rawValue))
        try UnixSocket.bind(plain.fd, tree.url("plain.sock"))
        #expect(mode(tree.url("plain.sock")).mode == 0o777 & ~wide)
        let narrow = try UnixSocket.make(Int32(SOCK_STREAM.rawValue))
        try UnixSocket.bindPrivately(narrow.fd, tree.url("private.sock"))
        #expect(mode(tree.url("private.sock")) == (0o600 & ~wide, getgid(), true))
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give the folder another group"))
    func groupModeGivesTheSocketItsFoldersGroup() throws {
        let tree = TemporaryTree()
        tree.mkdir("run")
        #expect(chown(tree.url("run"), UInt32.max, 4242) == 0)
        let server = ControlServer(path: tree.url("run/cw.sock"), mode: 0o660)
        let w = try watcher(tree, sinks: [server])
        defer { w.stop() }
        try server.listen()
        #expect(mode(server.path) == (0o660, 4242, true))
    }

    @Test func aStaleSocketIsReplacedAndALiveOneIsAnError() throws {
        let tree = TemporaryTree()
        let path = tree.url("cw.sock")
        // A socket file nobody listens on any more (a daemon that was killed).
        do {
            let stale = try UnixSocket.make(Int32(SOCK_STREAM.rawValue))
            try UnixSocket.bind(stale.fd, path)
        } // closed as its owner goes
        #expect(mode(path).isSocket)
        let first = ControlServer(path: path)
        let w = try watcher(tree, sinks: [first])
        defer { w.stop() }
        try first.listen()
        first.serve(watcher: w) { nil }
        #expect(try ControlClient(path: path).map { try $0.status().dirs.count } == 1)

        let second = ControlServer(path: path)
        #expect { try second.listen() } throws: { error in
            "\(error)".contains("another daemon answers") && "\(error)".contains(path)
        }
        #expect(
            try ControlClient(path: path).map { try $0.status().dirs.count } == 1, "the first daemon lost its socket")
    }

    @Test func aFileThatIsNotASocketIsNeverReplaced() throws {
        let tree = TemporaryTree()
        tree.write("important", size: 100)
        let server = ControlServer(path: tree.url("important"))
        #expect { try server.listen() } throws: { "\($0)".contains("not a socket") }
        #expect(diskTotals(tree.path).files == 1)
    }

    @Test func aPathTooLongForAUnixSocketIsAnErrorNamingIt() throws {
        let tree = TemporaryTree()
        let path = tree.url(String(repeating: "s", count: 120))
        #expect { try ControlServer(path: path).listen() } throws: { "\($0)".contains(path) }
    }
}
