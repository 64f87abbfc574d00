import Glibc
import Testing
@testable import CacheWarden

/// Where the config file and the control socket are when nothing names them, for root and for a user, from an
/// injected environment and effective user ID.
@Suite struct DefaultLocationsTests {
    static let user: UInt32 = 1000

    func at(_ environment: [String: String], euid: UInt32 = user) -> DefaultLocations {
        DefaultLocations(environment: environment, euid: euid)
    }

    /// The user database's home of `uid`, as the fallback reads it.
    func passwdHome(_ uid: UInt32) -> String? {
        getpwuid(uid).map { String(cString: $0.pointee.pw_dir) }.flatMap { $0.hasPrefix("/") ? $0 : nil }
    }

    @Test func rootReadsTheSystemFileWhateverItsEnvironmentSays() {
        let root = at(["HOME": "/root", "XDG_CONFIG_HOME": "/root/.cfg"], euid: 0)
        #expect(root.configFile == "/etc/cachewarden/cachewarden.conf")
        #expect(at([:], euid: 0).configFile == "/etc/cachewarden/cachewarden.conf")
    }

    @Test func aUserReadsXDGConfigHomeElseTheHomesDotConfig() {
        #expect(at(["HOME": "/home/u"]).configFile == "/home/u/.config/cachewarden/cachewarden.conf")
        #expect(
            at(["HOME": "/home/u", "XDG_CONFIG_HOME": "/srv/cfg"]).configFile == "/srv/cfg/cachewarden/cachewarden.conf"
        )
        // The XDG specification: an empty or relative value is ignored.
        #expect(
            at(["HOME": "/home/u", "XDG_CONFIG_HOME": ""]).configFile == "/home/u/.config/cachewarden/cachewarden.conf")
        #expect(
            at(["HOME": "/home/u", "XDG_CONFIG_HOME": "cfg"]).configFile
                == "/home/u/.config/cachewarden/cachewarden.conf")
        #expect(at(["HOME": "/"]).configFile == "/.config/cachewarden/cachewarden.conf")
    }

    @Test func withoutHOMETheHomeComesFromTheUserDatabase() {
        let nobody: UInt32 = 65534
        let expected = passwdHome(nobody)
        #expect(at([:], euid: nobody).home == expected)
        #expect(at(["HOME": "relative"], euid: nobody).home == expected)
        #expect(at([:], euid: nobody).configFile == expected.map { $0 + "/.config/cachewarden/cachewarden.conf" })
        // A user the database does not know, without HOME: no home, so no default file (the CLI says so).
        #expect(at([:], euid: 4_000_000_123).home == nil)
        #expect(at([:], euid: 4_000_000_123).configFile == nil)
    }

    @Test func xdgBaseDirectoriesFallBackToTheirDefaults() {
        let u = at(["HOME": "/home/u", "XDG_STATE_HOME": "/var/state/u"])
        #expect(u.baseDirectory("XDG_CACHE_HOME") == "/home/u/.cache")
        #expect(u.baseDirectory("XDG_DATA_HOME") == "/home/u/.local/share")
        #expect(u.baseDirectory("XDG_STATE_HOME") == "/var/state/u")
        #expect(u.baseDirectory("XDG_RUNTIME_DIR") == nil, "not a base directory with a default")
    }

    @Test func theDaemonListensUnderSystemdElseInAUsersRuntimeDirectory() {
        let service = at(["RUNTIME_DIRECTORY": "/run/user/1000/cachewarden", "XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(service.daemonSocket(userInstance: true) == "/run/user/1000/cachewarden/cachewarden.sock")
        #expect(service.daemonSocket(userInstance: false) == "/run/user/1000/cachewarden/cachewarden.sock")
        let user = at(["XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(user.daemonSocket(userInstance: true) == "/run/user/1000/cachewarden/cachewarden.sock")
        #expect(user.daemonSocket(userInstance: false) == nil, "--config and --dir runs listen only where told")
        #expect(at([:]).daemonSocket(userInstance: true) == nil)
        #expect(at(["XDG_RUNTIME_DIR": "run"]).daemonSocket(userInstance: true) == nil)
        let root = at(["XDG_RUNTIME_DIR": "/run/user/0"], euid: 0)
        #expect(root.daemonSocket(userInstance: true) == nil, "root listens only under systemd or where told")
        #expect(
            at(["RUNTIME_DIRECTORY": "/run/cachewarden"], euid: 0).daemonSocket(userInstance: true)
                == "/run/cachewarden/cachewarden.sock")
    }

    @Test func clientsTryTheUsersSocketThenTheSystemOne() {
        #expect(
            at(["XDG_RUNTIME_DIR": "/run/user/1000"]).clientSockets
                == ["/run/user/1000/cachewarden/cachewarden.sock", "/run/cachewarden/cachewarden.sock"])
        #expect(at([:]).clientSockets == ["/run/cachewarden/cachewarden.sock"])
        #expect(at(["XDG_RUNTIME_DIR": "/run/user/0"], euid: 0).clientSockets == ["/run/cachewarden/cachewarden.sock"])
        #expect(
            at(["RUNTIME_DIRECTORY": "/run/x:/run/y", "XDG_RUNTIME_DIR": "/run/user/1000"]).clientSockets
                == ["/run/x/cachewarden.sock"])
    }
}
