import CacheWardenFilesystem

/// The `auto` rule: inotify (with fanotify, else polling, for the directories past its watch limit), except for a
/// root on a filesystem where changes reach the files without passing through this machine's kernel — another
/// NFS or SMB client, another cluster node, the FUSE daemon or the host behind a shared folder. inotify sees nothing of
/// those (it reports only what this kernel's VFS does), so such a root is polled. Told apart by `statfs(2)`'s `f_type`
/// magic (`linux/magic.h`); FUSE covers `fuse`, `fuseblk`, sshfs, virtiofs, GlusterFS and s3fs alike. overlayfs stays
/// on inotify: changes through the overlay are seen, and its lower layers are meant to be read-only.
enum BackendSelection {
    static let polledFilesystems: [UInt32: String] = [
        0x6969: "nfs",
        0x517B: "smb",
        0xFF53_4D42: "cifs",
        0xFE53_4D42: "smb2",
        0x6573_5546: "fuse",
        0x0102_1997: "9p",
        0x00C3_6400: "ceph",
        0x5346_414F: "afs",
        0x6B41_4653: "afs",
        0x7375_7245: "coda",
        0x0000_564C: "ncpfs",
        0x7461_636F: "ocfs2",
        0x0116_1970: "gfs2",
        0x0BD0_0BD0: "lustre",
        0x4750_4653: "gpfs",
        0x1983_0326: "beegfs",
        0x2003_0528: "orangefs",
        0x786F_4256: "vboxsf",
    ]

    /// The backend for a root at `path` under `choice`, and what serves its directories past inotify's watch
    /// limit; with `auto`, `filesystem` names the filesystem that made it poll. `fanotifyProblem` is why fanotify
    /// cannot be used here (nil: it can).
    static func resolve(_ choice: BackendChoice, path: String, fanotifyProblem: String?)
        -> (kind: BackendKind, pastLimit: BackendKind?, filesystem: String?)
    {
        switch choice {
        case .inotify: return (.inotify, .poll, nil)
        case .fanotify: return (.fanotify, nil, nil)
        case .poll: return (.poll, nil, nil)
        case .auto:
            guard let magic = try? Syscall.fileSystemMagic(path), let name = polledFilesystems[magic] else {
                return (.inotify, fanotifyProblem == nil ? .fanotify : .poll, nil)
            }
            return (.poll, nil, name)
        }
    }
}
