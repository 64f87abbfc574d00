import CacheWarden
import CacheWardenCommandLine
import CacheWardenService
import Dispatch
import Glibc

/// How `trim` and `clear` wait while a cache's client holds its lock (`client_lock`): the daemon refuses the
/// request and deletes nothing, and the command asks again, first after a quarter of a second, then at most every
/// 5 s, for as long as the daemon lets its own trims wait (`client_lock_wait`, 1 h by default) or `--timeout`
/// says, saying once on stderr that it waits and for whom. `--no-wait` gives up at once. Giving up is exit 1 with
/// the holder.
struct LockWait {
    static let options: [OptionSpec] = [
        .flag(
            "no-wait",
            help: "When a cache's client holds its lock (client_lock), fail at once (exit 1) instead of waiting for it."
        ),
        .value(
            "timeout", "seconds",
            help: "Wait at most this many seconds for a client's lock (default: the daemon's client_lock_wait, 1 h)."),
    ]

    var noWait: Bool
    var timeout: Double?

    init(_ arguments: ParsedArguments) throws {
        noWait = arguments.flag("no-wait")
        if let text = arguments.value("timeout") {
            guard let seconds = LockWaitText.timeout(text) else {
                throw arguments.usageError(LockWaitText.badTimeout(text))
            }
            timeout = seconds
        }
        guard !(noWait && timeout != nil) else { throw arguments.usageError("give --no-wait or --timeout, not both") }
    }

    /// Runs `attempt` until no client's lock stands in its way (`busy` reads the lock and the daemon's limit out
    /// of an error), waiting as above. `what` names the command in the messages (`trim uv`).
    func run<T>(_ what: String, _ attempt: () throws -> T, busy: (any Error) -> (ClientLockBusy, Int64?)?) throws -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        var pause = 0.25
        var announced = false
        // A try that ran and stopped when a lock changed under it (`vanished`) deleted what it did before then.
        var stopped = false
        while true {
            do { return try attempt() } catch {
                guard let (lock, limit) = busy(error) else { throw error }
                stopped = stopped || lock.why == .vanished
                if noWait {
                    throw LockWaitEnded(message: LockWaitText.ended(what, lock, waited: nil, stopped: stopped))
                }
                let deadline = timeout ?? min(Double(limit ?? 3600), LockWaitText.maximumTimeout)
                let waited = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                guard waited < deadline else {
                    throw LockWaitEnded(message: LockWaitText.ended(what, lock, waited: waited, stopped: stopped))
                }
                if !announced {
                    StandardStreams.error(
                        "cachewarden: \(what): waiting: \(lock); at most \(Int(deadline)) s (--no-wait or --timeout to give up)\n"
                    )
                    announced = true
                }
                let nap = min(pause, deadline - waited)
                _ = usleep(useconds_t(max(0, nap) * 1e6))
                pause = min(pause * 2, 5)
            }
        }
    }
}

extension LockWait {
    /// The lock and the daemon's limit of a refusal for a client's lock.
    static func daemonBusy(_ error: any Error) -> (ClientLockBusy, Int64?)? {
        guard let error = error as? ControlClientError, let busy = error.busy else { return nil }
        return (busy, error.waitLimit)
    }
}

/// `trim` or `clear` gave up waiting for a client's lock (exit 1: the lock may be free later).
struct LockWaitEnded: Error {
    var message: String
}
