import CacheWardenService
import Foundation
import Glibc

/// "footprint" (issue 19, a lean binary): what the installed binary costs before it does any work — its size
/// (a stripped copy), the resident memory of an idle `cachewarden run` on an empty folder once its `ready` line is
/// out, and `cachewarden --version` as a whole process (exec, runtime start-up, exit). Beside it, inotifywait:
/// `inotifywait -m -r` idle on the same folder, and `inotifywait --help`.
struct FootprintResult: Sendable {
    var binary: String
    var bytes: Int64
    /// Of a copy passed through `strip` (nil without `strip`).
    var strippedBytes: Int64?
    var idleRSS: Int64
    /// After 300 writes of 10 KB into its 1 MB quota (and the trims they cause), idle again.
    var activeRSS: Int64
    var peerIdleRSS: Int64?
    /// inotifywait after the same writes (it prints a line each).
    var peerActiveRSS: Int64?
    /// Wall seconds per run, after warm-up runs.
    var version: [Double]
    var peerHelp: [Double]
}

enum FootprintBenchmark {
    /// Timed process runs per median (each is a few milliseconds), after `warmup` untimed ones.
    static let runs = 100
    static let warmup = 10

    /// The binary measured: `explicit`, else the static build of `make build` when it exists (what gets
    /// installed), else the CLI the other sections run.
    static func binary(explicit: String?, env: Environment) -> String? {
        if let explicit { return access(explicit, X_OK) == 0 ? explicit : nil }
        let installed = FileManager.default.currentDirectoryPath + "/.build-install/release/cachewarden"
        return access(installed, X_OK) == 0 ? installed : env.cli
    }

    static func run(binary: String, env: Environment, work: String, log: (String) -> Void) throws -> FootprintResult {
        let empty = "\(work)/footprint-empty"
        guard mkdir(empty, 0o755) == 0 || errno == EEXIST else { throw BenchError("footprint: cannot create \(empty)") }
        var result = FootprintResult(
            binary: binary, bytes: fileSize(binary), strippedBytes: try strippedSize(binary, work: work),
            idleRSS: 0, activeRSS: 0, version: [], peerHelp: [])
        (result.idleRSS, result.activeRSS) = try residentSizes(
            binary, ["run", "--dir", empty, "--quota", "1MB"],
            readyOn: .stdout("\"event\":\"ready\""), folder: empty,
            doneOn: "\"event\":\"trim\"", work: work, name: "cachewarden")
        result.version = try wallTimes(binary, ["--version"])
        if let peer = env.inotifywait {
            let watched = "\(work)/footprint-peer"
            guard mkdir(watched, 0o755) == 0 || errno == EEXIST else {
                throw BenchError("footprint: cannot create \(watched)")
            }
            (result.peerIdleRSS, result.peerActiveRSS) = try residentSizes(
                peer, ["-m", "-r", watched], readyOn: .stderr("Watches established"),
                folder: watched, doneOn: "f300", work: work, name: "inotifywait")
            result.peerHelp = try wallTimes(peer, ["--help"])
        }
        log(
            "footprint: \(binary): \(Format.bytes(result.bytes)), stripped \(result.strippedBytes.map(Format.bytes) ?? "n/a"); "
                + "idle RSS \(Format.bytes(result.idleRSS)), after 300 writes \(Format.bytes(result.activeRSS)) (inotifywait \(result.peerIdleRSS.map(Format.bytes) ?? "n/a"), \(result.peerActiveRSS.map(Format.bytes) ?? "n/a")); "
                + "--version \(Format.seconds(Stats.median(result.version))) (inotifywait --help \(Format.seconds(Stats.median(result.peerHelp))))"
        )
        return result
    }

    private static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    private static func strippedSize(_ binary: String, work: String) throws -> Int64? {
        guard let strip = Environment.which("strip") else { return nil }
        let copy = "\(work)/footprint-stripped"
        defer { unlink(copy) }
        guard try runToEnd(strip, ["-o", copy, binary]).status == 0 else {
            throw BenchError("footprint: strip \(binary) failed")
        }
        return fileSize(copy)
    }

    enum Ready {
        case stdout(String)
        case stderr(String)
    }

    /// `VmRSS` of `executable` one second after it said it is ready (the line `ready` names, in its output file),
    /// and again one second after 300 files of 10 KB were written into `folder` and its output showed `doneOn`.
    private static func residentSizes(
        _ executable: String, _ arguments: [String], readyOn ready: Ready, folder: String,
        doneOn done: String, work: String, name: String
    ) throws -> (idle: Int64, active: Int64) {
        let out = "\(work)/footprint-\(name).out"
        let err = "\(work)/footprint-\(name).err"
        let child = try Child(executable, arguments, stdout: .file(out), stderr: .file(err))
        defer { child.stop() }
        let (file, text) =
            switch ready {
            case .stdout(let t): (out, t)
            case .stderr(let t): (err, t)
            }
        try waitFor(text, in: file, child: child, name: name)
        Clock.sleep(1) // idle: whatever start-up left behind settles (timers armed, threads parked)
        let idle = try rss(child.pid, name: name)
        let chunk = [UInt8](repeating: 0x61, count: 10_000)
        for i in 1...300 {
            let fd = open("\(folder)/f\(i)", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else { throw BenchError("footprint: cannot write into \(folder)") }
            _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        try waitFor(done, in: out, child: child, name: name)
        Clock.sleep(1)
        return (idle, try rss(child.pid, name: name))
    }

    private static func waitFor(_ text: String, in file: String, child: Child, name: String) throws {
        let deadline = Clock.nanos() + 10_000_000_000
        while !((try? String(contentsOfFile: file, encoding: .utf8))?.contains(text) ?? false) {
            guard child.isRunning, Clock.nanos() < deadline else {
                throw BenchError("footprint: \(name) did not print \(text)")
            }
            Clock.sleep(0.01)
        }
    }

    private static func rss(_ pid: pid_t, name: String) throws -> Int64 {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kB = Int64(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "")
        else {
            throw BenchError("footprint: no VmRSS for \(name)")
        }
        return kB * 1024
    }

    /// Wall seconds of whole runs (spawn to reaped), output to /dev/null, exit status ignored
    /// (`inotifywait --help` exits 1).
    private static func wallTimes(_ executable: String, _ arguments: [String]) throws -> [Double] {
        var times: [Double] = []
        for i in 0..<(warmup + runs) {
            let started = Clock.nanos()
            try spawnAndWait(executable, arguments)
            if i >= warmup { times.append(Clock.seconds(since: started)) }
        }
        return times
    }

    /// posix_spawn and waitpid, as a shell or hyperfine runs a command: no pipes, no run loop.
    private static func spawnAndWait(_ executable: String, _ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError("footprint: cannot run \(executable): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}

/// The footprint rows: size, idle memory and start-up time, inotifywait beside.
struct FootprintSection: BenchSection {
    var result: FootprintResult

    var rows: [Report.Row] {
        let r = result
        let version = Stats.median(r.version), help = r.peerHelp.isEmpty ? nil : Stats.median(r.peerHelp)
        return [
            Report.Row(
                metric: "footprint: binary size, stripped (\(Self.relative(r.binary)))",
                cachewarden: "\(r.strippedBytes.map(Format.bytes) ?? "n/a") (\(Format.bytes(r.bytes)) unstripped)",
                peer: "", ratio: ""),
            Report.Row(
                metric: "footprint: idle RSS of `run` on an empty folder after ready",
                cachewarden: Format.bytes(r.idleRSS),
                peer: "inotifywait -m -r: \(r.peerIdleRSS.map(Format.bytes) ?? "n/a")",
                ratio: Format.ratio(Double(r.idleRSS), r.peerIdleRSS.map(Double.init))),
            Report.Row(
                metric: "footprint: RSS after 300 writes of 10 KB into a 1 MB quota (trims), idle again",
                cachewarden: Format.bytes(r.activeRSS),
                peer: "inotifywait -m -r: \(r.peerActiveRSS.map(Format.bytes) ?? "n/a")",
                ratio: Format.ratio(Double(r.activeRSS), r.peerActiveRSS.map(Double.init))),
            Report.Row(
                metric: "footprint: `--version` wall time (median of \(r.version.count))",
                cachewarden: Format.seconds(version), peer: "inotifywait --help: \(help.map(Format.seconds) ?? "n/a")",
                ratio: Format.ratio(version, help)),
        ]
    }

    /// `path` relative to the current folder when it is inside it (the table's column stays narrow).
    private static func relative(_ path: String) -> String {
        let here = FileManager.default.currentDirectoryPath + "/"
        return path.hasPrefix(here) ? String(path.dropFirst(here.count)) : path
    }

    var jsonKey: String { "footprint" }

    var json: JSONValue {
        let r = result
        return .object([
            ("binary", .string(r.binary)),
            ("bytes", .integer(r.bytes)),
            ("stripped_bytes", .integer(r.strippedBytes)),
            ("idle_rss_bytes", .integer(r.idleRSS)),
            ("inotifywait_idle_rss_bytes", .integer(r.peerIdleRSS)),
            ("active_rss_bytes", .integer(r.activeRSS)),
            ("inotifywait_active_rss_bytes", .integer(r.peerActiveRSS)),
            ("version_median_s", .number(Stats.median(r.version))),
            ("version_p90_s", .number(Stats.percentile(r.version, 90))),
            ("inotifywait_help_median_s", .number(r.peerHelp.isEmpty ? nil : Stats.median(r.peerHelp))),
        ])
    }
}
