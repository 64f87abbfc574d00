import Glibc
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem

/// The readiness set the inotify backend reads through: it becomes readable for queued records only while
/// armed, so a trim's own deletions (made while it is disarmed) wake nobody, and arming again never loses a record.
@Suite struct ReadinessSetTests {
    /// Whether the set's descriptor is readable right now. inotify queues a record inside the syscall that made the
    /// change, and the epoll callback runs there too, so a poll right after the change needs no waiting.
    private func readable(_ set: ReadinessSet) -> Bool {
        var p = pollfd(fd: set.fd.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLIN) != 0
    }

    private func watched(_ tree: TemporaryTree) throws -> (InotifyDescriptor, ReadinessSet) {
        let inotify = try InotifyDescriptor()
        let dir = try Syscall.openDirectory(path: tree.path)
        _ = try inotify.addWatch(directory: dir.fd)
        var set = try ReadinessSet()
        try set.add(inotify.fd)
        return (inotify, set)
    }

    private func drain(_ inotify: InotifyDescriptor) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        while try inotify.read(into: buffer) > 0 {}
    }

    @Test func aRecordMakesTheArmedSetReadableAndDisarmingQuietsIt() throws {
        let tree = TemporaryTree()
        var (inotify, set) = try watched(tree)
        defer { withExtendedLifetime(inotify) {} } // the instance closes with its last holder
        #expect(!readable(set))
        _ = tree.write("a", size: 10)
        #expect(readable(set))
        set.disarm()
        #expect(!readable(set))
        // Disarmed: more records queue, the set stays quiet.
        for i in 0..<50 { _ = tree.write("b\(i)", size: 10) }
        #expect(!readable(set))
    }

    @Test func armingWithRecordsQueuedMakesTheSetReadableAtOnce() throws {
        let tree = TemporaryTree()
        var (inotify, set) = try watched(tree)
        defer { withExtendedLifetime(inotify) {} } // the instance closes with its last holder
        _ = tree.write("a", size: 10)
        set.disarm()
        _ = tree.write("b", size: 10) // queued while disarmed
        #expect(!readable(set))
        set.arm()
        #expect(readable(set))
        set.disarm()
        try drain(inotify)
        set.arm()
        #expect(!readable(set), "nothing queued after the drain")
    }

    @Test func deletionsWhileDisarmedWakeNobodyAndAreReadAfterArming() throws {
        let tree = TemporaryTree()
        for i in 0..<100 { _ = tree.write("f\(i)", size: 10) }
        var (inotify, set) = try watched(tree)
        defer { withExtendedLifetime(inotify) {} } // the instance closes with its last holder
        set.disarm()
        for i in 0..<100 { tree.remove("f\(i)") }
        #expect(!readable(set))
        set.arm()
        #expect(readable(set))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        var deletions = 0
        while true {
            let n = try inotify.read(into: buffer)
            guard n > 0 else { break }
            InotifyRecords.forEach(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n])) { r in
                if InotifyRecords.kind(of: r) == .deleted { deletions += 1 }
            }
        }
        #expect(deletions == 100)
    }

    /// The descriptors the kernel lists as registered in epoll set `fd` (`tfd:` lines of its fdinfo).
    private func registered(_ set: ReadinessSet) -> [FileDescriptor] {
        guard let info = try? String(contentsOfFile: set.fd.procInfoPath, encoding: .utf8) else { return [] }
        return info.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("tfd:") else { return nil }
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int32($0) }.map(
                FileDescriptor.init(rawValue:))
        }
    }

    @Test func aDisarmedDescriptorIsOutOfTheSetSoItsRecordsRunNoCallback() throws {
        let tree = TemporaryTree()
        var (inotify, set) = try watched(tree)
        defer { withExtendedLifetime(inotify) {} } // the instance closes with its last holder
        #expect(registered(set) == [inotify.fd])
        // Registered with no events would still hang on the queue's wait list and run epoll's callback for every
        // record; disarmed, the kernel lists nothing in the set.
        set.disarm()
        #expect(registered(set).isEmpty)
        #expect(!set.isArmed(inotify.fd))
        set.disarm() // twice is harmless
        set.arm()
        #expect(registered(set) == [inotify.fd])
        set.remove(inotify.fd)
        #expect(registered(set).isEmpty)
    }
}
