import Dispatch
import Foundation
import Glibc
import Synchronization
import SystemPackage

/// Every child process the benchmark started and has not reaped yet, plus the temporary folder, so that neither
/// outlives the benchmark: `Child.stop` reaps normally, and Ctrl-C / SIGTERM kill whatever is left and remove the
/// folder before exiting.
final class Cleanup: Sendable {
    /// The one registry of the process.
    static let shared = Cleanup()

    private let pids = Mutex<Set<pid_t>>([])
    private let stopping = Atomic<Bool>(false)

    /// Set on an interrupt: writers stop creating files, so the folder can be removed.
    var isStopping: Bool { stopping.load(ordering: .relaxed) }
    private let workDirectory = Mutex<String?>(nil)

    /// Remembers a started child. Once an interrupt is being handled `killAll` may have run already, so a child
    /// started then is killed at once, unless it is part of the cleanup (`rm`).
    func track(_ pid: pid_t, cleanup: Bool = false) {
        pids.withLock { set in
            set.insert(pid)
            if isStopping && !cleanup { kill(pid, SIGKILL) }
        }
    }

    /// Forgets a reaped child.
    func untrack(_ pid: pid_t) { _ = pids.withLock { $0.remove(pid) } }

    /// Sends `signal` to every child not reaped yet.
    func killAll(_ signal: Int32 = SIGKILL) {
        pids.withLock { set in for pid in set { kill(pid, signal) } }
    }

    /// The temporary folder to remove on an interrupt (`nil`: none, or kept).
    func setWorkDirectory(_ path: String?) { workDirectory.withLock { $0 = path } }

    /// On SIGINT or SIGTERM: kill the children, remove the temporary folder, exit with 128 + signal.
    func installSignalHandlers() {
        for signo in [SIGINT, SIGTERM] {
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
            source.setEventHandler { [self] in
                FileHandle.standardError.write(Data("\ncachewarden-bench: interrupted, cleaning up\n".utf8))
                stopping.store(true, ordering: .relaxed)
                killAll()
                Clock.sleep(0.1) // the writers notice and stop
                if let dir = workDirectory.withLock({ $0 }) {
                    // A writer thread may still be adding files: retry until the folder is gone.
                    for _ in 0..<10 where access(dir, F_OK) == 0 {
                        Files.removeTree(dir)
                        Clock.sleep(0.05)
                    }
                }
                exit(128 + signo)
            }
            source.resume()
            // Kept for the life of the process.
            _ = Unmanaged.passRetained(source as AnyObject)
        }
    }
}

/// Where a child's output stream goes.
enum ChildOutput {
    /// `/dev/null`.
    case null
    /// A pipe this process reads.
    case pipe
    /// A file (created or truncated).
    case file(String)
    /// This process's own stream.
    case inherit
}

/// A child process started with Foundation's `Process`, tracked by `Cleanup` until it is reaped.
///
/// Ends are timed by the pipes, not by `waitUntilExit()` (which polls its run loop every 50 ms): a process that
/// closes its stdout has finished its work.
final class Child {
    let process = Process()
    private(set) var stdoutPipe: Pipe?
    private(set) var stderrPipe: Pipe?
    /// `Clock.nanos()` just before `run()`.
    private(set) var startedAt: UInt64 = 0
    /// `true` until `run()` succeeded (nothing to stop or reap then).
    private var reaped = true

    /// Starts `executable` with `arguments`; `stdin` is a file to read from (default `/dev/null`). Once an
    /// interrupt is being handled only `cleanup` children start.
    init(
        _ executable: String, _ arguments: [String], stdin: String? = nil,
        stdout: ChildOutput = .null, stderr: ChildOutput = .inherit, cleanup: Bool = false
    ) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let stdin {
            guard let handle = FileHandle(forReadingAtPath: stdin) else { throw BenchError("cannot read \(stdin)") }
            process.standardInput = handle
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        stdoutPipe = try Self.attach(stdout) { process.standardOutput = $0 }
        stderrPipe = try Self.attach(stderr) { process.standardError = $0 }
        if Cleanup.shared.isStopping && !cleanup { throw BenchError("interrupted") }
        startedAt = Clock.nanos()
        try process.run()
        reaped = false
        Cleanup.shared.track(process.processIdentifier, cleanup: cleanup)
    }

    private static func attach(_ output: ChildOutput, _ set: (Any?) -> Void) throws -> Pipe? {
        switch output {
        case .null: set(FileHandle.nullDevice); return nil
        case .inherit: return nil
        case .pipe: let p = Pipe(); set(p); return p
        case .file(let path):
            guard FileManager.default.createFile(atPath: path, contents: nil),
                let handle = FileHandle(forWritingAtPath: path)
            else { throw BenchError("cannot create \(path)") }
            set(handle)
            return nil
        }
    }

    /// The child's process id.
    var pid: pid_t { process.processIdentifier }

    /// Whether the child has not exited yet.
    var isRunning: Bool { process.isRunning }

    /// Reads the child's stdout pipe to its end; returns the bytes and `Clock.nanos()` at the end.
    func readStdoutToEnd() -> (data: Data, endedAt: UInt64) {
        guard let pipe = stdoutPipe else { return (Data(), Clock.nanos()) }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        return (data, Clock.nanos())
    }

    /// Reads the stderr pipe until `text` appears; returns `Clock.nanos()` at that moment, or `nil` on timeout or
    /// end of stream. What was read is appended to `transcript`.
    func waitForStderr(containing text: String, timeout: Double, transcript: inout String) -> UInt64? {
        guard let fd = stderrPipe?.fileHandleForReading.fileDescriptor else { return nil }
        return Self.wait(on: FileDescriptor(rawValue: fd), containing: text, timeout: timeout, transcript: &transcript)
    }

    /// The same on the stdout pipe.
    func waitForStdout(containing text: String, timeout: Double, transcript: inout String) -> UInt64? {
        guard let fd = stdoutPipe?.fileHandleForReading.fileDescriptor else { return nil }
        return Self.wait(on: FileDescriptor(rawValue: fd), containing: text, timeout: timeout, transcript: &transcript)
    }

    private static func wait(on fd: FileDescriptor, containing text: String, timeout: Double, transcript: inout String)
        -> UInt64?
    {
        let deadline = Clock.nanos() + UInt64(timeout * 1e9)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var seen: [UInt8] = []
        while Clock.nanos() < deadline {
            var pfd = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 100)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd.rawValue, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            seen.append(contentsOf: buffer[0..<n])
            let now = Clock.nanos()
            let decoded = String(decoding: seen, as: UTF8.self)
            if decoded.contains(text) {
                transcript += decoded
                return now
            }
        }
        transcript += String(decoding: seen, as: UTF8.self)
        return nil
    }

    /// Keeps reading (and discarding) the stderr pipe on a thread of its own until the child closes it, so that
    /// a chatty child never blocks on a full pipe.
    func drainStderrInBackground() {
        guard let fd = stderrPipe?.fileHandleForReading.fileDescriptor else { return }
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
            }
        }
        thread.start()
    }

    /// Sends `signal`, waits up to `grace` seconds for the exit, then SIGKILLs; reaps the child and returns its
    /// termination status (-1 when it was reaped already, or never started).
    @discardableResult
    func stop(signal: Int32 = SIGTERM, grace: Double = 3) -> Int32 {
        if !reaped {
            if process.isRunning { kill(pid, signal) }
            let deadline = Clock.nanos() + UInt64(grace * 1e9)
            while process.isRunning && Clock.nanos() < deadline { Clock.sleep(0.005) }
            if process.isRunning { kill(pid, SIGKILL) }
            process.waitUntilExit()
            Cleanup.shared.untrack(pid)
            reaped = true
            return process.terminationStatus
        }
        return -1
    }

    /// Waits for a child that ends by itself, reaps it and returns its status (-1 as for `stop`).
    @discardableResult
    func wait() -> Int32 {
        if !reaped {
            process.waitUntilExit()
            Cleanup.shared.untrack(pid)
            reaped = true
            return process.terminationStatus
        }
        return -1
    }

    deinit { stop(signal: SIGKILL, grace: 0) }
}

extension Child {
    /// `inotifywait` at `path` with `arguments` (stdout to /dev/null), once it printed "Watches established.";
    /// its stderr is drained from then on. Returns the child and `Clock.nanos()` at that line.
    static func inotifywait(_ path: String, _ arguments: [String], timeout: Double = 30) throws -> (
        child: Child, established: UInt64
    ) {
        let child = try Child(path, arguments, stdout: .null, stderr: .pipe)
        var transcript = ""
        guard
            let established = child.waitForStderr(
                containing: "Watches established.", timeout: timeout, transcript: &transcript)
        else {
            child.stop(signal: SIGKILL, grace: 0)
            throw BenchError(transcript.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        child.drainStderrInBackground()
        return (child, established)
    }
}

/// A failure that ends the benchmark with a message.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command to its end with stdout captured: its output, exit status, and the seconds from launch to the end
/// of its stdout.
func runToEnd(_ executable: String, _ arguments: [String], stdin: String? = nil) throws
    -> (output: String, status: Int32, seconds: Double)
{
    let child = try Child(executable, arguments, stdin: stdin, stdout: .pipe, stderr: .inherit)
    let (data, end) = child.readStdoutToEnd()
    let status = child.wait()
    return (String(decoding: data, as: UTF8.self), status, Clock.seconds(from: child.startedAt, to: end))
}
