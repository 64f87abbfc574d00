import SystemPackage

/// Free space of the filesystem holding a path, as the low-disk policy and `status` read it. A seam so tests can
/// script a filesystem filling up and draining instead of filling a real one.
protocol DiskProbe: Sendable {
    func freeSpace(of path: String) throws(Errno) -> FreeSpace
}
