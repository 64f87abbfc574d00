/// The lock each client takes on its own cache, worked out from the client's source and checked against the real
/// client with strace and `/proc/locks` (docs/configuration.md, Client locks, says how each was verified):
///
/// - uv 0.13: every command that uses the cache holds `flock(LOCK_SH)` on `<cache>/.lock` for its whole life, and
///   `uv cache clean`/`prune` take it exclusive before deleting. The same exclusive lock keeps a trim out of the way
///   of any running uv.
/// - cargo 1.95: `$CARGO_HOME/.package-cache-mutate` (shared while a build reads the registry, for its whole
///   compile) then `$CARGO_HOME/.package-cache` (downloads and unpacking): cargo's own garbage collector takes both
///   exclusive in that order (`CacheLockMode::MutateExclusive`). `$CARGO_HOME` is the folder of the registered
///   `registry/`: the locks are `../NAME`, the one kind of path outside the root a lock may have.
/// - huggingface_hub 2.4 (filelock): `.locks/<repo folder>/<etag>.lock`, one per blob, `flock(LOCK_EX)` while it is
///   downloaded and linked into a snapshot; reads take none. Taken per unit (`evict_unit = entry`: a repository).
/// - ccache (symlink locks, which `flock` cannot take), sccache's local cache and Go's build cache (no lock on the
///   cache), pip, npm, nginx and Bazel (none either): no lock; their profiles rely on idle waits and protected
///   files. Gradle (`build-cache-1/build-cache-1.lock`, a POSIX lock: `ofd`) has no profile.
extension CacheProfile {
    /// The client's own locks, or nil when it takes none.
    var clientLock: ClientLocks? {
        switch self {
        case .uv: ClientLocks([ClientLock(".lock")])
        case .cargo: ClientLocks([ClientLock("../.package-cache-mutate"), ClientLock("../.package-cache")])
        case .huggingface: ClientLocks([ClientLock(".locks/{unit}/*.lock")])
        default: nil // ccache, sccache, go, pip, npm, nginx, bazel, generic (and any profile added later)
        }
    }
}
