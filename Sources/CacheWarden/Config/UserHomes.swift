import Glibc
import Synchronization

/// The home directories of the password database. `RootGuard` protects every account's home, a service account's
/// (an SFTP user's data, `www-data`'s `/var/www`) included, but for one that lies in a system cache place
/// (`man`'s `/var/cache/man`, `apt-cacher-ng`'s cache); `discover` searches the homes of users who can log in.
package enum UserHomes {
    /// A home, and whose it is as a phrase after "the home directory": "of user alice".
    package struct Home: Sendable, Equatable {
        package var owner: String
        package var path: String
        /// The account has a login shell (not `nologin`, `false`, …).
        package var canLogIn = true

        package init(owner: String, path: String, canLogIn: Bool = true) {
            self.owner = owner
            self.path = path
            self.canLogIn = canLogIn
        }
    }

    /// Shells that let nobody in (passwd(5): an empty shell is `/bin/sh`, a login shell).
    static let noLoginShells: Set<String> = ["nologin", "false", "sync", "halt", "shutdown"]

    /// `setpwent`/`getpwent` walk one cursor per process: one walk at a time.
    private static let database = Mutex(())

    /// The home of every user in the password database (`getpwent`: local users, and those of NSS sources that
    /// enumerate) who can log in.
    package static func loginUsers() -> [Home] {
        allAccounts().filter(\.canLogIn)
    }

    /// The home of every account in the password database, whatever its shell (not `/`, which a few system
    /// accounts have for none).
    package static func allAccounts() -> [Home] {
        database.withLock { _ in
            var homes: [Home] = []
            setpwent()
            defer { endpwent() }
            while let entry = getpwent() {
                if let home = home(of: entry.pointee) { homes.append(home) }
            }
            return homes
        }
    }

    /// The home of the user with ID `uid`: a user an NSS source (LDAP, sssd) knows but does not enumerate is still
    /// found by the owner of a folder.
    package static func ofOwner(_ uid: uid_t) -> Home? {
        var entry = passwd(), found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return home(of: entry)
    }

    private static func home(of entry: passwd) -> Home? {
        guard let dir = entry.pw_dir, let name = entry.pw_name else { return nil }
        let path = String(cString: dir)
        let shell = entry.pw_shell.map { String(cString: $0) } ?? ""
        guard path.hasPrefix("/"), path != "/" else { return nil }
        return Home(
            owner: "of user \(String(cString: name))", path: path,
            canLogIn: !noLoginShells.contains(PathResolver.lastComponent(shell)))
    }
}
