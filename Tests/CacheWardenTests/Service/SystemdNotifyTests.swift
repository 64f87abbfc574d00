import Foundation
import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import CacheWarden
@testable import CacheWardenFilesystem
@testable import CacheWardenService

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace):
/// it collects every message with the time it arrived.
final class NotifyListener: Sendable {
    /// The messages, shared with the receiving thread.
    final class Messages: Sendable {
        private let list = Mutex<[(at: Date, fields: [String])]>([])
        func append(_ fields: [String]) { list.withLock { $0.append((Date(), fields)) } }
        var all: [(at: Date, fields: [String])] { list.withLock { $0 } }
    }

    let address: String
    private let socket: OwnedDescriptor
    private let messages = Messages()

    init(address: String) throws {
        self.address = address
        socket = try UnixSocket.make(Int32(SOCK_DGRAM.rawValue))
        try UnixSocket.bind(socket.fd, address)
        // The thread holds the socket too: it closes once the thread is done with it.
        Foundation.Thread.detachNewThread { [messages, socket] in
            let fd = socket.fd.rawValue
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return }
                let text = String(decoding: buffer[0..<n], as: UTF8.self)
                messages.append(text.split(separator: "\n").map(String.init))
            }
        }
    }

    deinit {
        shutdown(socket.fd.rawValue, Int32(SHUT_RDWR))
        if !address.hasPrefix("@") { unlink(address) }
    }

    var all: [(at: Date, fields: [String])] { messages.all }

    /// Every message that carries `field` (e.g. `READY=1`), in order.
    func with(_ field: String) -> [(at: Date, fields: [String])] { all.filter { $0.fields.contains(field) } }
}

/// Serialized: several tests measure the gaps between pings to tens of milliseconds, and one blocks the watcher's
/// queue and Dispatch worker threads on purpose; beside one another they would measure each other.
@Suite(.serialized) struct SystemdNotifyTests {
    /// `cachewarden run` on a small tree. With `watchdogPid`, `WATCHDOG_PID` names the daemon itself, as systemd
    /// sets it (a shell exports its own PID and execs the daemon).
    private func daemon(_ tree: TemporaryTree, notify: String, watchdogUsec: Int? = nil, watchdogPid: Bool = false)
        throws -> RunningCLI
    {
        tree.mkdir("cache")
        for i in 0..<50 { tree.write("cache/d\(i % 5)/f\(i)", size: 3000) }
        let config = tree.url("cw.conf")
        try "dir.cache.path = cache\ndir.cache.quota = 10MB\n".write(toFile: config, atomically: true, encoding: .utf8)
        var env: [String: String?] = ["NOTIFY_SOCKET": notify, "WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]
        if let watchdogUsec { env["WATCHDOG_USEC"] = String(watchdogUsec) }
        guard watchdogPid else { return try RunningCLI(["run", "-c", config], environment: env) }
        return try RunningCLI(
            ["-c", "WATCHDOG_PID=$$ exec \"$0\" \"$@\"", cachewardenBinary(), "run", "-c", config],
            executable: "/bin/sh", environment: env)
    }

    @Test func readyAfterEveryReadyLineThenStatusReloadingAndStopping() throws {
        let tree = TemporaryTree()
        let listener = try NotifyListener(address: tree.url("notify.sock"))
        let cli = try daemon(tree, notify: listener.address)
        #expect(eventually { !listener.with("READY=1").isEmpty }, "no READY=1: \(cli.stderr)")
        let ready = try #require(listener.with("READY=1").first)
        #expect(eventually { cli.lines.contains { $0.contains("\"event\":\"ready\"") } })
        let readyLine = try #require(cli.lines.first { $0.contains("\"event\":\"ready\"") })
        let readyTime = try #require(
            (try JSONSerialization.jsonObject(with: Data(readyLine.utf8)) as? [String: Any])?["time"] as? String)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(try #require(formatter.date(from: readyTime)) <= ready.at, "READY=1 came before the ready line")
        #expect(ready.fields.contains { $0.hasPrefix("STATUS=1 dirs, ") }, "\(ready.fields)")

        // Changes bring STATUS= updates, at most one a second.
        for i in 0..<200 { tree.write("cache/new\(i)", size: 1000) }
        #expect(eventually { listener.all.count >= 2 })
        let statuses = listener.all.filter { $0.fields.count == 1 && $0.fields[0].hasPrefix("STATUS=") }
        for (a, b) in zip(statuses, statuses.dropFirst()) { #expect(b.at.timeIntervalSince(a.at) > 0.9) }

        cli.signal(SIGHUP)
        #expect(eventually { listener.with("READY=1").count == 2 }, "\(listener.all.map(\.fields))")
        let reloading = try #require(listener.with("RELOADING=1").first)
        let usec = reloading.fields.first { $0.hasPrefix("MONOTONIC_USEC=") }.flatMap { Int64($0.dropFirst(15)) }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUsec = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
        #expect(usec.map { nowUsec - $0 >= 0 && nowUsec - $0 < 30_000_000 } == true, "\(reloading.fields)")
        #expect(
            listener.all.firstIndex { $0.fields.contains("RELOADING=1") }! < listener.all.lastIndex {
                $0.fields.contains("READY=1")
            }!)

        #expect(cli.interrupt() == 0)
        #expect(listener.all.last?.fields.contains("STOPPING=1") == true, "\(listener.all.last?.fields ?? [])")
    }

    @Test func theAbstractNamespaceWorksToo() throws {
        let tree = TemporaryTree()
        let listener = try NotifyListener(address: "@cachewarden-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let cli = try daemon(tree, notify: listener.address)
        #expect(eventually { !listener.with("READY=1").isEmpty }, "no READY=1 on \(listener.address): \(cli.stderr)")
        #expect(cli.interrupt() == 0)
    }

    @Test func watchdogPingsComeAtAQuarterOfThePeriodFromTheCLI() throws {
        let tree = TemporaryTree()
        let listener = try NotifyListener(address: tree.url("notify.sock"))
        let cli = try daemon(tree, notify: listener.address, watchdogUsec: 200_000) // pings every 50 ms
        #expect(eventually { listener.with("WATCHDOG=1").count >= 10 }, "\(listener.all.count) messages")
        let pings = listener.with("WATCHDOG=1").map(\.at)
        let gaps = zip(pings, pings.dropFirst()).map { $1.timeIntervalSince($0) }
        #expect(gaps.allSatisfy { $0 < 0.2 }, "a gap beyond the watchdog interval: \(gaps)")
        #expect(cli.interrupt() == 0)
    }

    /// systemd kills the service once a whole `WATCHDOG_USEC` passes without a ping. At 0.4 s, no gap between two
    /// pings may exceed half of it plus 50 ms of scheduling margin, over 4 s of pings: a ping that comes late or
    /// not at all (a timer's leeway, a tick that goes missing) still leaves systemd a ping in time.
    @Test func watchdogGapsStayWithinHalfThePeriodAtFourHundredMilliseconds() throws {
        let tree = TemporaryTree()
        let listener = try NotifyListener(address: tree.url("notify.sock"))
        let cli = try daemon(tree, notify: listener.address, watchdogUsec: 400_000, watchdogPid: true)
        #expect(eventually { !listener.with("WATCHDOG=1").isEmpty }, "no ping: \(cli.stderr)")
        let first = try #require(listener.with("WATCHDOG=1").first).at
        #expect(eventually { listener.with("WATCHDOG=1").last!.at.timeIntervalSince(first) >= 4 })
        let pings = listener.with("WATCHDOG=1").map(\.at)
        let gaps = zip(pings, pings.dropFirst()).map { $1.timeIntervalSince($0) }
        #expect(gaps.max()! <= 0.2 + 0.05, "largest gap \(gaps.max()!) s of \(pings.count) pings: \(gaps)")
        #expect(cli.interrupt() == 0)
    }

    /// The pings come from a thread of their own: 120 ms of work every 170 ms on the watcher's queue (busy, never
    /// stuck) leaves no gap over half the 400 ms period. From the queue itself, a ping that met a block waited for
    /// it, and as the two periods drift, one after an unhindered ping came 0.32 s after it.
    @Test func aBusyWatcherQueueDelaysNoPingBeyondHalfThePeriod() throws {
        let tree = TemporaryTree()
        tree.mkdir("cache")
        let listener = try NotifyListener(address: tree.url("notify.sock"))
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address, "WATCHDOG_USEC": "400000"])
        let watcher = Watcher(
            settings: WardenSettings(directories: [DirectorySettings(name: "cache", path: tree.url("cache"))]))
        try watcher.start()
        defer { watcher.stop() }
        let load = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "load"))
        load.schedule(deadline: .now(), repeating: .milliseconds(170), leeway: .milliseconds(1))
        load.setEventHandler { watcher.engine.queue.async { usleep(120_000) } }
        load.resume()
        defer { load.cancel() }
        watcher.startHeartbeat(every: try #require(notifier.watchdogInterval)) { notifier.watchdog() }
        #expect(eventually { listener.with("WATCHDOG=1").count >= 2 })
        let first = listener.with("WATCHDOG=1")[0].at
        #expect(eventually { listener.with("WATCHDOG=1").last!.at.timeIntervalSince(first) >= 4 })
        let pings = listener.with("WATCHDOG=1").map(\.at)
        let gaps = zip(pings, pings.dropFirst()).map { $1.timeIntervalSince($0) }
        #expect(gaps.max()! <= 0.2 + 0.05, "largest gap \(gaps.max()!) s of \(pings.count) pings: \(gaps)")
    }

    /// The pings stop while the watcher's queue is stuck (here in a veto hook that waits): none goes out while the
    /// probe a ping sent through the queue has waited longer than an interval, and systemd would restart the
    /// service; once the queue is free again they resume.
    @Test func aStuckWatcherQueueStopsThePings() throws {
        let tree = TemporaryTree()
        tree.mkdir("cache")
        let listener = try NotifyListener(address: tree.url("notify.sock"))
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address, "WATCHDOG_USEC": "100000"])
        let release = DispatchSemaphore(value: 0)
        var dir = DirectorySettings(name: "cache", path: tree.url("cache"), quota: 10_000)
        dir.shouldEvict = { _ in
            release.wait(); return true
        }
        let watcher = Watcher(settings: WardenSettings(directories: [dir]))
        try watcher.start()
        defer { watcher.stop() }
        watcher.startHeartbeat(every: try #require(notifier.watchdogInterval)) { notifier.watchdog() }
        #expect(eventually { listener.with("WATCHDOG=1").count >= 3 })
        tree.write("cache/big", size: 20_000) // crosses the quota: the trim blocks the queue in the hook
        #expect(eventually { watcher.totalsIfIdle == nil })
        let stuckAt = listener.with("WATCHDOG=1").count
        // A peer timer at the heartbeat's own interval, on a queue of its own, measures the window: five of its
        // ticks are five heartbeats the stuck queue did not send (however slow the host is, both are as late).
        let interval = try #require(notifier.watchdogInterval)
        let ticks = Atomic<Int>(0)
        let peer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "peer"))
        peer.schedule(
            deadline: .now() + .milliseconds(Int(interval * 1000)), repeating: .milliseconds(Int(interval * 1000)))
        peer.setEventHandler { ticks.add(1, ordering: .relaxed) }
        peer.resume()
        defer { peer.cancel() }
        #expect(eventually { ticks.load(ordering: .relaxed) >= 5 })
        #expect(listener.with("WATCHDOG=1").count <= stuckAt + 1, "pings went on while the queue was stuck")
        release.signal()
        #expect(eventually { listener.with("WATCHDOG=1").count >= stuckAt + 3 }, "pings did not resume")
    }

    @Test func theLastTrimsClockIsTheLocalTimeOfDayAsFoundationFormatsIt() {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        formatter.timeZone = TimeZone.current
        for t in [0, 1_700_000_000.999, 1_795_567_482.5, Date().timeIntervalSince1970] {
            let date = Date(timeIntervalSince1970: t)
            #expect(SystemdStatusSink.clock(date) == formatter.string(from: date), "\(t)")
        }
    }
}

extension Watcher {
    /// The totals when the watcher's queue answers within 50 ms, nil while it is busy (or stuck).
    var totalsIfIdle: [DirectoryTotals]? {
        let answer = Mutex<[DirectoryTotals]?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let t = self.totals()
            answer.withLock { $0 = t }
            done.signal()
        }
        return done.wait(timeout: .now() + 0.05) == .success ? answer.withLock { $0 } : nil
    }
}
