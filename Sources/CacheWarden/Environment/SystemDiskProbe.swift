import SystemPackage

/// `statvfs` of the path: the probe every watcher uses unless a test injects its own.
struct SystemDiskProbe: DiskProbe {
    func freeSpace(of path: String) throws(Errno) -> FreeSpace { try FreeSpace.of(path) }
}
