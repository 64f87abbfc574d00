import Foundation
import Glibc
import Testing
@testable import CacheWarden

/// Overflow recovery, root loss, hostile names and trees, closed stdout, reload.
@Suite struct ReliabilityTests {
    /// Parses the `total` of the last `status` line of a CLI run.
    static func lastStatusTotal(_ cli: RunningCLI) -> Int? {
        guard let line = cli.lines.last(where: { $0.contains("\"event\":\"status\"") }),
            let obj = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { return nil }
        return obj["total"] as? Int
    }

    @Test func aQueueOverflowIsRecoveredByARescan() throws {
        let tree = TemporaryTree()
        let cli = try RunningCLI(["run", "--dir", tree.path, "--size-basis", "apparent"])
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } })
        cli.signal(SIGSTOP)
        // Far more records than fs.inotify.max_queued_events (16,384 by default): each file is create+modify+close.
        let limit = InotifyDescriptor.maxQueuedEvents ?? 16_384
        for i in 0..<(limit / 2 + 2000) { tree.write("f\(i)", size: 1 + i % 300) }
        cli.signal(SIGCONT)
        #expect(eventually(timeout: 60) { cli.lines.contains { $0.contains("\"event\":\"overflow\"") } })
        #expect(eventually(timeout: 60) { cli.lines.contains { $0.contains("\"event\":\"rescan\"") } })
        let disk = diskTotals(tree.path, basis: .apparent)
        // Ask for a status line and wait for it (a condition, not a pause) until one shows the disk's total.
        let statusLines = { cli.lines.filter { $0.contains("\"event\":\"status\"") }.count }
        #expect(
            eventually(timeout: 60) {
                let before = statusLines()
                cli.signal(SIGUSR1)
                return eventually(timeout: 5) { statusLines() > before } && Self.lastStatusTotal(cli) == Int(disk.total)
            })
        #expect(cli.interrupt() == 0)
        #expect(try parseWithPython(cli.stdout).contains("rescan"))
    }

    @Test func aDeletedRootIsReportedAndReArmedWhenItComesBack() throws {
        let parent = TemporaryTree()
        let root = parent.url("root")
        parent.mkdir("root")
        parent.write("root/a", size: 100)
        let log = EventLog(), clock = ManualClock()
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "r", path: root)], sizeBasis: .apparent),
            clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        func errors(_ kind: String) -> Int {
            log.all.filter {
                if case .error(let e) = $0.kind { return e.kind == kind }; return false
            }.count
        }
        parent.remove("root")
        #expect(eventually { errors("root_lost") == 1 })
        #expect(watcher.totals()[0].total == 0)
        // Replaced by a symlink: refused, said once (the lost root is looked for every second).
        symlink(parent.path, root)
        clock.advance(by: 3)
        #expect(errors("root_symlink") == 1)
        unlink(root)
        parent.mkdir("root")
        parent.write("root/b", size: 250)
        #expect(log.names.filter { $0 == "ready" }.count == 1, "back before its poll")
        clock.advance(by: 1)
        #expect(log.names.filter { $0 == "ready" }.count == 2)
        parent.write("root/c", size: 50)
        #expect(eventually { watcher.totals()[0].total == 300 })
    }

    @Test(.enabled(if: getuid() == 0 && which("setpriv") != nil, "needs root and setpriv to run the watcher as nobody"))
    func anUnreadableSubdirectoryIsAnErrorAndTheRestKeepsWorking() throws {
        // As root every directory is readable: run the watcher as `nobody` (setpriv) on a tree it can read,
        // except for one folder.
        let setpriv = try #require(which("setpriv"))
        let tree = TemporaryTree()
        chmod(tree.path, 0o777)
        tree.write("locked/x", size: 10)
        tree.write("open/y", size: 10)
        chmod(tree.url("locked"), 0)
        chmod(tree.url("open/y"), 0o666)
        defer { chmod(tree.url("locked"), 0o755) }
        let cli = try RunningCLI(
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", cachewardenBinary(),
                "run", "--dir", tree.path, "--size-basis", "apparent",
            ], executable: setpriv)
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } })
        let error = try #require(cli.lines.first { $0.contains("\"event\":\"error\"") })
        #expect(error.contains("\"kind\":\"permission\""))
        #expect(error.contains("\"file\":\"locked\""))
        // The rest keeps working.
        tree.write("open/z", size: 5)
        #expect(eventually { cli.lines.contains { $0.contains("\"file\":\"open/z\"") } })
        #expect(cli.interrupt() == 0)
    }

    @Test func oddNamesAndDeepTreesNeitherCrashNorBreakTheJSON() throws {
        let tree = TemporaryTree()
        let h = try WatcherHarness(tree, basis: .apparent)
        tree.write(String(repeating: "n", count: 255), size: 10)
        tree.write("line\nbreak", size: 10)
        // 1,000 levels deep (mkdirat level by level: the full path is longer than PATH_MAX).
        var fd = open(tree.path, O_RDONLY | O_DIRECTORY)
        for _ in 0..<1000 {
            mkdirat(fd, "d", 0o755)
            let next = openat(fd, "d", O_RDONLY | O_DIRECTORY)
            close(fd)
            fd = next
        }
        let f = openat(fd, "deep-file", O_CREAT | O_WRONLY, 0o644)
        _ = write(f, "xyz", 3)
        close(f)
        close(fd)
        #expect(eventually { h.total >= 23 })
        let events = h.log.all
        #expect(try parseWithPython(events.map { $0.jsonLine() }.joined()).count == events.count)
        // Clean up the deep tree bottom-up (rm -rf handles it).
        _ = try runProcess("/bin/rm", ["-rf", tree.url("d")])
    }

    /// Starts `cachewarden run` with its stdout on a pipe the test controls.
    static func runWithStdout(_ pipe: Pipe, _ args: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: cachewardenBinary())
        p.arguments = args
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    @Test func aStuckReaderDoesNotStopTrimming() throws {
        // `cachewarden run … | sleep 600`: the reader never reads, the pipe fills, trimming goes on.
        let tree = TemporaryTree()
        let pipe = Pipe()
        let p = try Self.runWithStdout(
            pipe, ["run", "--dir", tree.path, "--quota", "50KB", "--size-basis", "apparent"])
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        #expect(waitUntilWatching(p.processIdentifier))
        for i in 0..<3000 { tree.write("f\(i)", size: 200) } // > 64 KiB of event lines: the pipe is full
        #expect(eventually { diskTotals(tree.path, basis: .apparent).total <= 50_000 })
        // Reading now gets the backlog (and a `dropped` line if lines had to go): all of it valid JSON.
        kill(p.processIdentifier, SIGINT)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(try parseWithPython(String(decoding: data, as: UTF8.self)).last == "stop")
    }

    @Test func linesPastTheBufferBoundAreDroppedAndCounted() throws {
        let tree = TemporaryTree()
        let pipe = Pipe()
        // A 16 KiB bound and a reader that does not read: the pipe (64 KiB) and then the bound fill up.
        let p = try Self.runWithStdout(
            pipe, ["run", "--dir", tree.path, "--size-basis", "apparent", "--max-buffered", "16KiB"])
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        #expect(waitUntilWatching(p.processIdentifier))
        for i in 0..<3000 { tree.write("f\(i)", size: 10) }
        tree.write("last", size: 10)
        // Now read: the backlog, then a `dropped` line once there is room, then the rest.
        let reader = pipe.fileHandleForReading
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !text.contains("\"event\":\"dropped\"") {
            let chunk = reader.availableData
            text += String(decoding: chunk, as: UTF8.self)
            if !text.contains("\"event\":\"dropped\"") { tree.write("nudge\(text.count)", size: 1) }
        }
        // The watcher kept counting meanwhile (its totals are not held up by the sink). Before stopping it, wait
        // until it has seen every file: a `status` line (SIGUSR1) counting them all comes after all their lines.
        let onDisk = diskTotals(tree.path, basis: .apparent).files
        while Date() < deadline, !Self.statusLines(text).contains(where: { $0["files"] as? Int == onDisk }) {
            kill(p.processIdentifier, SIGUSR1)
            text += String(decoding: reader.availableData, as: UTF8.self)
        }
        kill(p.processIdentifier, SIGINT)
        text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let names = try parseWithPython(text)
        #expect(names.contains("dropped"))
        let droppedLine = try #require(text.split(separator: "\n").first { $0.contains("\"event\":\"dropped\"") })
        let count = try #require(
            (try JSONSerialization.jsonObject(with: Data(droppedLine.utf8)) as? [String: Any])?["count"] as? Int)
        #expect(count > 0)
        #expect(names.last == "stop")
        // Lines written + lines dropped account for every write (3,000 files, the last one and the nudges).
        let dropped = text.split(separator: "\n").filter { $0.contains("\"event\":\"dropped\"") }
            .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["count"] as? Int }
        #expect(names.filter { $0 == "write" }.count + dropped.reduce(0, +) >= onDisk)
    }

    /// The `status` lines of a CLI run's output, parsed.
    static func statusLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").filter { $0.contains("\"event\":\"status\"") }
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func aClosedStdoutDoesNotStopTrimming() throws {
        let tree = TemporaryTree()
        let pipe = Pipe()
        let p = try Self.runWithStdout(
            pipe, ["run", "--dir", tree.path, "--quota", "50KB", "--size-basis", "apparent"])
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        try pipe.fileHandleForReading.close() // the reader is gone: writes fail with EPIPE
        #expect(waitUntilWatching(p.processIdentifier))
        for i in 0..<200 { tree.write("f\(i)", size: 2000) }
        #expect(eventually { diskTotals(tree.path, basis: .apparent).total <= 50_000 })
        #expect(p.isRunning)
    }

    @Test func exitOnEPIPEExitsWhenTheReaderIsGone() throws {
        let tree = TemporaryTree()
        let pipe = Pipe()
        let p = try Self.runWithStdout(pipe, ["run", "--dir", tree.path, "--exit-on-epipe"])
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        try pipe.fileHandleForReading.close()
        // The `ready` line already meets the closed pipe; a write makes sure there is a line to fail on.
        tree.write("x", size: 10)
        #expect(eventually { !p.isRunning })
    }

    @Test func reloadAppliesALoweredQuotaAtOnceAndKeepsOldSettingsOnBadInput() throws {
        let tree = TemporaryTree()
        for i in 0..<10 { tree.write("f\(i)", size: 1000, mtime: Double(1_000_000 + i)) }
        let h = try WatcherHarness(tree, quota: 100_000, basis: .apparent)
        var lowered = WardenSettings(
            directories: [DirectorySettings(name: "cache", path: tree.path, quota: 5000)], sizeBasis: .apparent)
        try h.watcher.reload(lowered)
        #expect(h.total <= 2500)
        lowered.directories[0].name = "bad name"
        #expect(throws: WardenError.self) { try h.watcher.reload(lowered) }
        #expect(h.watcher.totals().map(\.dir) == ["cache"])
    }

    @Test func churnOfManyDirectoriesReturnsTheWatchCount() throws {
        let tree = TemporaryTree()
        let inotify = InotifyCapture()
        let h = try WatcherHarness(tree, backend: inotify.factory)
        let fd = try #require(inotify.descriptor)
        let before = Self.kernelWatches(fd)
        #expect(before == 1)
        let rounds = Int(ProcessInfo.processInfo.environment["CACHEWARDEN_CHURN_DIRS"] ?? "") ?? 2000
        for i in 0..<rounds { tree.mkdir("c\(i)/x") }
        #expect(eventually { Self.kernelWatches(fd) == before + 2 * rounds })
        for i in 0..<rounds { tree.remove("c\(i)") }
        // IN_IGNORED drops each watch: the kernel's count and the ledger's map return to the start.
        #expect(eventually { Self.kernelWatches(fd) == before && h.watcher.watchCount == before })
        #expect(h.totalsMatchDisk())
    }

    /// Watches held by one inotify descriptor, from /proc/self/fdinfo.
    static func kernelWatches(_ fd: FileDescriptor) -> Int {
        guard let text = try? String(contentsOfFile: fd.procInfoPath, encoding: .utf8) else { return -1 }
        return text.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
    }
}

/// Deletion safety under attack, the watch-limit fallback, and a config-parser fuzz.
@Suite struct HostileTreeTests {
    @Test func swappingADirectoryForASymlinkDuringTrimsNeverReachesTheCanary() throws {
        let canary = TemporaryTree("cw-canary")
        for i in 0..<20 { canary.write("precious\(i)", size: 100, mtime: 1_000) }
        let tree = TemporaryTree()
        tree.mkdir("sub")
        let h = try WatcherHarness(tree, basis: .apparent)
        let rounds = Int(ProcessInfo.processInfo.environment["CACHEWARDEN_SWAP_ROUNDS"] ?? "") ?? 1000
        let done = Atomic<Bool>(false)
        let attacker = Foundation.Thread {
            for i in 0..<rounds {
                for j in 0..<3 { tree.write("sub/old\(i)-\(j)", size: 100, mtime: 2_000) }
                _ = Glibc.rename(tree.url("sub"), tree.url("sub.real"))
                _ = symlink(canary.path, tree.url("sub"))
                usleep(50)
                _ = unlink(tree.url("sub"))
                _ = Glibc.rename(tree.url("sub.real"), tree.url("sub"))
            }
            done.store(true, ordering: .releasing)
        }
        attacker.start()
        var trims = 0
        while !done.load(ordering: .acquiring) {
            _ = try? h.watcher.trim("cache", to: 0)
            trims += 1
        }
        for i in 0..<20 { #expect(canary.exists("precious\(i)")) }
        #expect(trims > 0)
        #expect(
            h.totalsMatchDisk(basis: .apparent),
            "watcher \(h.total) B/\(h.files), disk \(diskTotals(tree.path, basis: .apparent)) \(ModelBasedTotalsTests.inventory(tree.path))"
        )
    }

    @Test func randomConfigTextNeverCrashesTheParser() {
        let tree = TemporaryTree()
        var g = ModelBasedTotalsTests.Generator(state: 42)
        let pieces = [
            "dir.", "a", ".path", ".quota", " = ", "=", "#", " ", "\n", "\t", "size_basis", "1MB", "KiB", "-",
            "..", "/", "\u{0}", "é", "🙂", "max_age", "1mo", "manual", "protect", "*", ",", "%", "low_disk_free", "0",
        ]
        var errors = 0
        for _ in 0..<5000 {
            var text = ""
            for _ in 0..<g.below(30) { text += g.pick(pieces)! }
            do { _ = try WardenSettings.parse(text, source: "fuzz.conf", relativeTo: tree.path) } catch {
                errors += 1
                #expect(error.description.hasPrefix("fuzz.conf:"))
                #expect(!error.description.contains("\n"))
            }
        }
        #expect(errors > 0)
    }
}

import Synchronization
import SystemPackage

/// A lost root that comes back refused is said to be once, however many times it is looked at.
@Suite struct RefusedComebackTests {
    @Test func aRootBackWithoutItsTagIsRefusedAndSaidOnce() throws {
        let tree = TemporaryTree("cw", under: TemporaryTree.outsideCachePlaces)
        tree.writeText("root/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        tree.write("root/a", size: 100)
        let log = EventLog(), clock = ManualClock()
        let watcher = Watcher(
            settings: WardenSettings(
                directories: [DirectorySettings(name: "r", path: tree.url("root"), quota: 1000)],
                sizeBasis: .apparent), clock: clock, log: log)
        try watcher.start()
        defer { watcher.stop() }
        func errors(_ kind: String) -> Int {
            log.all.filter {
                if case .error(let e) = $0.kind { return e.kind == kind }; return false
            }.count
        }
        tree.remove("root")
        #expect(eventually { errors("root_lost") == 1 })
        // Made again by someone else, without the tag: nothing says it is a cache any more.
        tree.write("root/b", size: 100)
        clock.advance(by: 1)
        #expect(errors("root_refused") == 1)
        clock.advance(by: 30)
        #expect(errors("root_refused") == 1, "said once")
        #expect(watcher.status().first?.lost?.contains("is refused now") == true)
        #expect(tree.exists("root/b"))
        // Tagged again, it is taken back at the next look (judged again within `Engine.rejudgeInterval`).
        tree.writeText("root/CACHEDIR.TAG", CacheDirTag.signature + "\n")
        clock.advance(by: 11)
        #expect(log.names.filter { $0 == "ready" }.count == 2)
        #expect(watcher.status().first?.lost == nil)
    }
}
