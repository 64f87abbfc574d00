import Foundation
import Glibc
@testable import CacheWardenService

/// The real systemd-journald for a test: the one running, or one started standalone (as root:
/// `/lib/systemd/systemd-journald` runs without systemd once `/run/systemd/journal/` exists) and stopped again
/// by `stop()`, which also removes the sockets it leaves behind — a stopped journald's socket stays as a file
/// that refuses every record, and would look like a journald to the next run.
final class Journald: @unchecked Sendable {
    static let binary = "/lib/systemd/systemd-journald"
    static let directory = "/run/systemd/journal"
    static let socket = JournalSink.defaultSocket

    /// Why no journald can be had here, or nil.
    static let unavailable: String? = {
        guard which("journalctl") != nil else { return "needs journalctl (Debian's systemd package)" }
        if JournalSink.isListening(socket) { return nil }
        guard geteuid() == 0 else { return "no journald runs, and starting one needs root" }
        guard access(binary, X_OK) == 0 else { return "no journald runs, and there is no \(binary) to start" }
        return nil
    }()

    /// The journald this test started (nil: one was running already, and stays).
    private let started: RunningCLI?
    /// `/run/systemd/journal` did not exist before: remove it whole afterwards.
    private let madeDirectory: Bool

    /// Uses the running journald, or starts one. A socket nothing receives at (a stopped journald's) is told
    /// apart at once by `JournalSink.listener(at:)`, and replaced: journald binds its sockets afresh.
    init() throws {
        if JournalSink.isListening(Self.socket) {
            started = nil
            madeDirectory = false
            return
        }
        madeDirectory = access(Self.directory, F_OK) != 0
        try FileManager.default.createDirectory(atPath: Self.directory, withIntermediateDirectories: true)
        let journald = try RunningCLI([], executable: Self.binary)
        started = journald
        guard eventually(timeout: 20, { JournalSink.isListening(Self.socket) || !journald.process.isRunning }),
            JournalSink.isListening(Self.socket)
        else {
            stop()
            throw ParseFailure(message: "journald did not start listening on \(Self.socket): \(journald.stderr)")
        }
    }

    /// Stops the journald this test started and removes what it left in `/run/systemd/journal`.
    func stop() {
        guard let started else { return }
        if started.process.isRunning {
            started.signal(SIGTERM)
            if !eventually(timeout: 10, { !started.process.isRunning }) { started.signal(SIGKILL) }
            started.process.waitUntilExit()
        }
        if madeDirectory {
            try? FileManager.default.removeItem(atPath: Self.directory)
        } else {
            for name in ["socket", "stdout", "dev-log", "io.systemd.journal"] { unlink("\(Self.directory)/\(name)") }
        }
    }

    /// The records `journalctl -o json` finds for `match` (`FIELD=value`), each read by Foundation's JSON parser:
    /// a field's value as a string, or as the strings of a repeated field. (journalctl writes a value that is not
    /// printable text — a newline in it — as an array of byte values: decoded here as UTF-8.)
    static func records(_ match: String) throws -> [[String: [String]]] {
        guard let journalctl = which("journalctl") else { throw ParseFailure(message: "no journalctl") }
        let r = try runProcess(journalctl, ["-o", "json", "--no-pager", match])
        return try r.out.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw ParseFailure(message: "not a JSON object: \(line)")
            }
            return object.mapValues { value in
                guard let many = value as? [Any] else { return [text(value)] }
                return many.allSatisfy { $0 is String } || many.contains { $0 is [Any] } ? many.map(text) : [text(many)]
            }
        }
    }

    /// A value journalctl wrote: a string, or an array of byte values (decoded as UTF-8).
    private static func text(_ value: Any) -> String {
        if let s = value as? String { return s }
        if let bytes = value as? [Any] {
            return String(decoding: bytes.compactMap { ($0 as? NSNumber)?.uint8Value }, as: UTF8.self)
        }
        return "\(value)"
    }
}
