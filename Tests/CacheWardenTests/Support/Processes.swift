import Foundation
@testable import CacheWarden

/// The `cachewarden` binary built next to the tests (`swift build` builds it; `swift test` too).
func cachewardenBinary() -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    for candidate in [
        Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("cachewarden").path,
        root.appendingPathComponent(".build/debug/cachewarden").path,
    ] {
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return root.appendingPathComponent(".build/debug/cachewarden").path
}

/// Runs a program to completion, returning its status, stdout and stderr; `environment` entries are added to the
/// test's own (nil removes one).
@discardableResult
func runProcess(
    _ path: String, _ args: [String], stdin: String? = nil,
    environment: [String: String?] = [:]
) throws -> (status: Int32, out: String, err: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.environment = testEnvironment(environment)
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    try p.run()
    if let stdin { inp.fileHandleForWriting.write(Data(stdin.utf8)) }
    try inp.fileHandleForWriting.close()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

/// The test's own environment with `changes` applied (nil removes a variable).
func testEnvironment(_ changes: [String: String?]) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    for (k, v) in changes { env[k] = v }
    return env
}

/// Whether a program is on PATH.
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// Checks every line with Python's `json.loads` (each must be one JSON object); returns the parsed `event`
/// names, or throws with Python's complaint.
func parseWithPython(_ lines: String) throws -> [String] {
    let script = """
        import json, sys
        names = []
        for n, line in enumerate(sys.stdin.buffer.read().split(b"\\n")):
            if not line: continue
            obj = json.loads(line)
            assert isinstance(obj, dict), f"line {n} is not an object"
            assert "event" in obj and "time" in obj, f"line {n} lacks event/time"
            names.append(obj["event"])
        print("\\n".join(names))
        """
    let r = try runProcess(which("python3") ?? "/usr/bin/python3", ["-c", script], stdin: lines)
    guard r.status == 0 else { throw ParseFailure(message: r.err) }
    return r.out.split(separator: "\n").map(String.init)
}

struct ParseFailure: Error { var message: String }

/// A `cachewarden run` child process with its stdout collected.
/// `@unchecked`: `Process` is not `Sendable`; the process is only started, signalled and waited on from the test
/// that owns it.
final class RunningCLI: @unchecked Sendable {
    /// What the pipes' readability handlers collect. The handlers hold this, never the `RunningCLI`: a handler that
    /// held the last reference ran `deinit` on its own dispatch source's queue, which cancelled that source from
    /// inside its handler and crashed libdispatch's manager thread once in a full test run.
    private final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var out = Data()
        var err = Data()
        /// Pipes that reached their end (the child and every process holding them closed them).
        var ended = 0

        func handler(stderr: Bool) -> @Sendable (FileHandle) -> Void {
            { [self] h in
                let d = h.availableData
                if d.isEmpty { h.readabilityHandler = nil }
                lock.withLock {
                    if d.isEmpty { ended += 1 } else if stderr { err.append(d) } else { out.append(d) }
                }
            }
        }
    }

    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let collected = Collected()

    /// Starts `executable` with `args`; `environment` entries are added to the test's own (nil removes one).
    init(_ args: [String], executable: String = cachewardenBinary(), environment: [String: String?] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = args
        process.environment = testEnvironment(environment)
        process.standardOutput = output
        process.standardError = errors
        output.fileHandleForReading.readabilityHandler = collected.handler(stderr: false)
        errors.fileHandleForReading.readabilityHandler = collected.handler(stderr: true)
        try process.run()
    }

    var stdout: String { collected.lock.withLock { String(decoding: collected.out, as: UTF8.self) } }
    var stderr: String { collected.lock.withLock { String(decoding: collected.err, as: UTF8.self) } }
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    func signal(_ s: Int32) { kill(process.processIdentifier, s) }

    /// Sends SIGINT and waits for the exit status and for both pipes to reach their end (all output collected).
    func interrupt() -> Int32 {
        signal(SIGINT)
        process.waitUntilExit()
        _ = eventually(timeout: 5) { collected.lock.withLock { collected.ended == 2 } }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        output.fileHandleForReading.readabilityHandler = nil
        errors.fileHandleForReading.readabilityHandler = nil
    }
}

/// Waits until process `pid` holds at least `count` inotify watches: it has started watching, so changes made
/// from now on reach it as events. A readiness signal that needs nothing from its stdout.
@discardableResult
func waitUntilWatching(_ pid: Int32, count: Int = 1, timeout: Double = 20) -> Bool {
    eventually(timeout: timeout) {
        guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return false }
        for fd in fds {
            guard
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))
                    == "anon_inode:inotify",
                let info = procText("/proc/\(pid)/fdinfo/\(fd)")
            else { continue }
            if info.split(separator: "\n").filter({ $0.hasPrefix("inotify wd:") }).count >= count { return true }
        }
        return false
    }
}

/// A /proc file's whole text, or nil. Foundation's `String(contentsOfFile:)` returns what the first read gives of a
/// file whose size reads 0: one page (4,082 of /proc/net/unix's 24,574 bytes with 200 sockets open).
func procText(_ path: String) -> String? { try? FileContents.load(path, limit: 64 << 20) }

/// How many descriptors process `pid` has open (its /proc/PID/fd entries).
func descriptorCount(_ pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count ?? 0
}

/// How many sockets process `pid` holds that carry the address `path`: a listener bound there and the connections
/// it accepted (`/proc/net/unix` names their inodes; a connection still waiting in the backlog has none yet).
func socketCount(_ pid: Int32, at path: String) -> Int {
    let table = procText("/proc/net/unix") ?? ""
    let inodes = Set(
        table.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            return fields.count == 8 && fields[7] == path ? "socket:[\(fields[6])]" : nil
        })
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    return fds.filter {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")).map(inodes.contains)
            == true
    }.count
}

/// The fields of a /proc `stat` file after the command's name (which may hold spaces): state (field 3 of
/// proc(5), here 0), …, utime (14, here 11), stime (15, here 12).
func statFields(_ path: String) -> [Substring]? {
    guard let stat = procText(path), let name = stat.lastIndex(of: ")") else { return nil }
    return stat[stat.index(after: name)...].split(separator: " ")
}

/// Whether every thread of process `pid` is stopped (state `T` in each /proc/PID/task/TID/stat).
func isStopped(_ pid: Int32) -> Bool {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return !tasks.isEmpty && tasks.allSatisfy { statFields("/proc/\(pid)/task/\($0)/stat")?.first == "T" }
}

/// The CPU time process `pid` has used so far, user and system (/proc/PID/stat's utime and stime), in seconds.
func cpuSeconds(_ pid: Int32) -> Double? {
    guard let fields = statFields("/proc/\(pid)/stat"), fields.count > 12, let user = Double(fields[11]),
        let system = Double(fields[12])
    else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The share of one core process `pid` uses over a window of `seconds` (a measurement: the window is the point, so
/// it is waited out in full).
func cpuShare(_ pid: Int32, over seconds: Double) -> Double? {
    guard let before = cpuSeconds(pid) else { return nil }
    let start = Date()
    Thread.sleep(forTimeInterval: seconds)
    guard let after = cpuSeconds(pid) else { return nil }
    return (after - before) / Date().timeIntervalSince(start)
}
