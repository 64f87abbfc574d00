import Dispatch

/// Traps unless the caller runs on `queue` — in debug builds only (`swift build`, `swift test`); a release build
/// compiles it to nothing. The check behind every `@unchecked Sendable` type that is confined to one serial queue
/// rather than guarded by a lock: called at the type's entry points, it turns a call from the wrong thread into a
/// crash at the call instead of a data race somewhere later.
@inline(__always)
package func assertOnQueue(_ queue: DispatchQueue) {
    #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
    #endif
}
