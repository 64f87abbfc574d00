import Dispatch
import Logging

/// The watcher's blocking calls as `async` functions for Swift concurrency: each runs on the watcher's own queue
/// and suspends the caller meanwhile, so a scan of a large tree or a long trim never holds a cooperative thread.
/// In an `async` context these are the ones chosen.
extension Watcher {
    /// `start()`, suspending while the directories are scanned.
    public func start() async throws(WardenError) {
        try await Self.onQueue(engine) { engine throws(WardenError) in try engine.start() }
    }

    /// `trim(_:to:)`, suspending while it deletes.
    @discardableResult
    public func trim(_ name: String, to bytes: Int64?) async throws(WardenError) -> TrimReport {
        try await Self.onQueue(engine) { engine throws(WardenError) in try engine.trim(name, to: bytes) }
    }

    /// `clear(_:dryRun:progress:)`, suspending while it deletes.
    @discardableResult
    public func clear(
        _ names: [String] = [], dryRun: Bool = false,
        progress: (@Sendable (ClearProgress) -> Void)? = nil
    ) async throws(WardenError) -> ClearReport {
        try await Self.onQueue(engine) { engine throws(WardenError) in
            try engine.clear(names, dryRun: dryRun, progress: progress)
        }
    }

    /// `report(_:logger:)`, suspending while the trees are read.
    public static func report(
        _ settings: WardenSettings,
        logger: Logger = Logger(label: "cachewarden")
    ) async throws(WardenError) -> [DirectoryStatus] {
        let engine = Engine(settings: settings, mode: .observe, sinks: [], logger: logger)
        return try await onQueue(engine) { engine throws(WardenError) in try engine.report() }
    }

    /// Runs `body` on the engine's queue and resumes the caller with its result.
    private static func onQueue<T: Sendable>(
        _ engine: Engine,
        _ body: @escaping @Sendable (Engine) throws(WardenError) -> T
    ) async throws(WardenError) -> T {
        let result: Result<T, WardenError> = await withCheckedContinuation { continuation in
            engine.queue.async {
                do throws(WardenError) { continuation.resume(returning: .success(try body(engine))) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
