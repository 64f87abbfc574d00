import CWardenShims
import Glibc

/// A thread of its own for work that blocks (the tree walkers of an initial scan, the stdout writer): the part of
/// Foundation's `Thread` the library used — a block, a name, `start()` — on pthreads. Foundation's comes with the
/// whole of Foundation, and in a static binary with ICU's locale data; the library needs neither.
/// (`package`: the journal sink in CacheWardenService sends from one too.)
/// The thread is detached: it ends when its block returns, and nothing joins it.
package final class Thread {
    /// The thread's name as `top` and `/proc/PID/task/*/comm` show it (the kernel keeps 15 bytes). Set before `start`.
    package var name: String?
    private let block: @Sendable () -> Void

    package init(block: @escaping @Sendable () -> Void) {
        self.block = block
    }

    /// What the new thread needs, handed over through `pthread_create`'s one pointer.
    private final class Start {
        let block: @Sendable () -> Void
        let name: String?
        init(block: @escaping @Sendable () -> Void, name: String?) {
            self.block = block
            self.name = name
        }
    }

    /// Starts the block on a new thread. A thread that cannot be created stops the process: callers wait for
    /// their threads (a scan for its walkers), and would otherwise wait forever.
    package func start() {
        let start = Unmanaged.passRetained(Start(block: block, name: name)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
                if let name = start.name { cwsys_name_thread(name) }
                start.block()
                return nil
            }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            fatalError("cannot create a thread (\(name ?? "unnamed")): \(String(cString: strerror(rc)))")
        }
        pthread_detach(thread)
    }
}
